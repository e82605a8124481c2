package io.github.llmratelimiter.autoconfigure.slices;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.webflux.test.autoconfigure.WebFluxTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * A cost quota over WebFlux: spent by the priced usage of JSON and streamed responses (cached
 * prompt tokens at their own price), then denied with 429 QUOTA_EXCEEDED until the month ends.
 */
@WebFluxTest(controllers = WebFluxQuotaTests.Upstream.class, properties = {
    "ratelimiter.policies.spend.quotas.budget.unit=cost",
    "ratelimiter.policies.spend.quotas.budget.limit=0.001",
    "ratelimiter.policies.spend.quotas.budget.period=month",
    "ratelimiter.prices.default.input=1",
    "ratelimiter.prices.default.output=2",
    "ratelimiter.prices.default.cached-input=0.5",
    "ratelimiter.web.routes[0].include=/quota/**",
    "ratelimiter.web.routes[0].policy=spend"})
class WebFluxQuotaTests {

  private static final String KEY = "sk-webflux-quota-0123456789";
  /** 10 seconds before April. */
  private static final Instant END_OF_MARCH = Instant.parse("2026-03-31T23:59:50Z");
  /** A body the default estimator counts as 20 model tokens (40 micro-units at 2 per token). */
  private static final String BODY =
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"abcdefgh\"}],\"max_tokens\":10}";

  @TestConfiguration
  @Import(Upstream.class)
  static class Clocks {
    @Bean
    ManualTicker ticker() {
      return new ManualTicker();
    }

    @Bean
    RateLimitStore rateLimitStore(ManualTicker ticker) {
      return RateLimitStore.inMemory(ticker, InstantSource.fixed(END_OF_MARCH), 100,
          task -> new CompletableFuture<>());
    }
  }

  @Autowired WebTestClient client;
  @Autowired RateLimitStore store;
  @Autowired RateLimitPolicies policies;

  private WebTestClient.ResponseSpec call(String path) {
    return client.post().uri(path).header("Authorization", "Bearer " + KEY)
        .contentType(MediaType.APPLICATION_JSON).bodyValue(BODY).exchange();
  }

  private long spent() {
    return store.administration().orElseThrow()
        .quotas(policies.policy("spend").levels().get(0).budget(), KEY).get(0).used();
  }

  @Test
  void jsonAndStreamedUsageSpendTheQuotaUntilItDeniesUntilTheMonthEnds() {
    // 100 uncached x 1 + 200 cached x 0.5 + 100 completion x 2 = 400
    call("/quota/json?prompt=300&cached=200&completion=100").expectStatus().isOk()
        .expectBody().consumeWith(r -> { });
    assertThat(spent()).isEqualTo(400);
    // streamed: 40 uncached x 1 + 280 completion x 2 = 600: the whole limit is spent
    call("/quota/stream?prompt=40&cached=0&completion=280").expectStatus().isOk()
        .expectBody().consumeWith(r -> { });
    assertThat(spent()).isEqualTo(1000);
    call("/quota/json?prompt=1&cached=0&completion=0").expectStatus().isEqualTo(429)
        .expectHeader().valueEquals("Retry-After", "10")
        .expectHeader().valueEquals("retry-after-ms", "10000")
        .expectBody()
        .jsonPath("$.reason").isEqualTo("QUOTA_EXCEEDED")
        .jsonPath("$.unit").isEqualTo("cost")
        .jsonPath("$.used").isEqualTo(1000)
        .jsonPath("$.error.code").isEqualTo("quota_exceeded");
    assertThat(spent()).isEqualTo(1000);
  }

  /** An upstream that reports the usage the test asks for. */
  @RestController
  public static class Upstream {

    @PostMapping(path = "/quota/json", produces = MediaType.APPLICATION_JSON_VALUE)
    public Mono<Map<String, Object>> json(@RequestParam long prompt, @RequestParam long cached,
        @RequestParam long completion) {
      return Mono.just(Map.of("object", "chat.completion", "usage", Map.of("prompt_tokens", prompt,
          "completion_tokens", completion, "total_tokens", prompt + completion,
          "prompt_tokens_details", Map.of("cached_tokens", cached))));
    }

    /** Writes the event stream's bytes as they are (no encoder wraps them in events again). */
    @PostMapping(path = "/quota/stream")
    public Mono<Void> stream(@RequestParam long prompt, @RequestParam long cached,
        @RequestParam long completion, ServerHttpResponse response) {
      response.getHeaders().setContentType(MediaType.TEXT_EVENT_STREAM);
      String events = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
          + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":" + prompt
          + ",\"completion_tokens\":" + completion + ",\"total_tokens\":" + (prompt + completion)
          + ",\"prompt_tokens_details\":{\"cached_tokens\":" + cached + "}}}\n\n"
          + "data: [DONE]\n\n";
      return response.writeWith(Mono.just(response.bufferFactory()
          .wrap(events.getBytes(java.nio.charset.StandardCharsets.UTF_8))));
    }
  }
}
