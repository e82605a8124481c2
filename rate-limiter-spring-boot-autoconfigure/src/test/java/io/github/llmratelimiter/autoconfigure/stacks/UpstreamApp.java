package io.github.llmratelimiter.autoconfigure.stacks;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A gateway whose handler stands in for the provider on either web stack: it answers with the
 * status and the provider headers the test puts in its query ({@code h=name:value}, repeatable),
 * as an application that copies the provider's response would. Time stands still (a manual
 * ticker); every provider report the enforcer applies is queued for the tests to await.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class UpstreamApp {

  /** The properties: a policy of 3 calls a minute per key, one upstream for the gpt-4o models. */
  public static final String[] PROPERTIES = {
      "ratelimiter.policies.chat.rpm.limit=3",
      "ratelimiter.upstreams.openai-main.rpm=100",
      "ratelimiter.upstreams.openai-main.models=gpt-4o*",
      "ratelimiter.web.routes[0].include=/v1/**",
      "ratelimiter.web.routes[0].policy=chat",
      "management.endpoints.web.exposure.include=ratelimiter"};

  @Bean
  ManualTicker ticker() {
    return new ManualTicker();
  }

  @Bean
  Reports reports() {
    return new Reports();
  }

  /** The statuses of the provider responses reported, in order. */
  public static final class Reports implements RateLimitObserver {

    /** The statuses reported. */
    public final BlockingQueue<Integer> statuses = new LinkedBlockingQueue<>();

    @Override
    public void onDecision(RateLimitOutcome outcome, long nanos) {}

    @Override
    public void onProviderReport(Upstream upstream, ProviderReport report, int status) {
      statuses.add(status);
    }
  }

  /** The stand-in for the provider. */
  @RestController
  public static class Provider {

    @PostMapping("/v1/chat/completions")
    ResponseEntity<String> chat(@RequestParam(name = "h", required = false) List<String> headers,
        @RequestParam(defaultValue = "200") int status) {
      ResponseEntity.BodyBuilder response = ResponseEntity.status(status);
      for (String h : headers == null ? List.<String>of() : headers) {
        int colon = h.indexOf(':');
        response.header(h.substring(0, colon), h.substring(colon + 1));
      }
      return response.header("Content-Type", "application/json")
          .body("{\"choices\":[],\"usage\":{\"total_tokens\":5}}");
    }
  }
}
