package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimited;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A {@code @RateLimited} method inside a routed request, on a model an upstream serves (Spring MVC,
 * in-memory store, time standing still): a call counts once on the upstream, and a 429 of the
 * caller's own method-level policy is the caller's, not the provider's, so it never closes the
 * upstream that every other tenant shares.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AnnotatedInsideRouteUpstreamTests {

  private static final String GPT = "{\"model\":\"gpt-4o\",\"messages\":[]}";

  private ConfigurableApplicationContext app;
  private int port;
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  void start() {
    app = AbstractWebStackScenarioTests.start(App.class, WebApplicationType.SERVLET,
        "ratelimiter.policies.chat.rpm.limit=100",
        "ratelimiter.policies.tight.rpm.limit=1",
        "ratelimiter.upstreams.openai-main.rpm=10",
        "ratelimiter.upstreams.openai-main.models=gpt-4o*",
        "ratelimiter.web.routes[0].include=/v1/**",
        "ratelimiter.web.routes[0].policy=chat");
    port = AbstractWebStackScenarioTests.port(app);
  }

  @AfterAll
  void stop() {
    app.close();
  }

  private HttpResponse<String> chat(String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/chat"))
        .header("Content-Type", "application/json").header("Authorization", "Bearer " + key)
        .POST(HttpRequest.BodyPublishers.ofString(GPT)).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private long upstreamRequestsRemaining() {
    return app.getBean(RateLimitStore.class).upstreamStatus(
        app.getBean(UpstreamRoutes.class).upstream("openai-main").orElseThrow()).requestsRemaining();
  }

  @Test
  void aTenantsOwnMethodLevel429NeverClosesTheSharedUpstreamAndACallCountsOnce() throws Exception {
    long before = upstreamRequestsRemaining();
    assertThat(chat("sk-annotated-tenant-a1").statusCode()).isEqualTo(200);
    assertThat(before - upstreamRequestsRemaining())
        .as("one call is one request on the upstream").isEqualTo(1);
    HttpResponse<String> own = chat("sk-annotated-tenant-a1");
    assertThat(own.statusCode()).as("tenant a's own method-level limit").isEqualTo(429);
    assertThat(chat("sk-annotated-tenant-b1").statusCode())
        .as("another tenant is not refused for tenant a's own limit: " + own.body())
        .isEqualTo(200);
  }

  /** The application: a routed handler that is also limited by its own annotation. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {

    @Bean
    ManualTicker ticker() {
      return new ManualTicker();
    }

    @RestController
    static class Chat {

      @RateLimited(policy = "tight")
      @PostMapping("/v1/chat")
      String chat() {
        return "{\"choices\":[],\"usage\":{\"total_tokens\":5}}";
      }
    }
  }
}
