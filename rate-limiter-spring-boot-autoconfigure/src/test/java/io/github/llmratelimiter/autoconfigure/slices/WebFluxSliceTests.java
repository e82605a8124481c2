package io.github.llmratelimiter.autoconfigure.slices;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.webflux.test.autoconfigure.WebFluxTest;
import org.springframework.context.annotation.Bean;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * The limiter in a {@code @WebFluxTest} slice, with no import of its own: a {@code @RateLimited}
 * method that returns a {@code Mono}, and a route with a per-route key expression, answer 429 with
 * their headers; a reset forgets every limit.
 */
@WebFluxTest(controllers = ReactiveChatController.class, properties = {
    "ratelimiter.policies.chat.rpm.limit=2",
    "ratelimiter.web.routes[0].include=/reactive/chat",
    "ratelimiter.web.routes[0].policy=chat",
    "ratelimiter.web.routes[0].key-expression=header('X-Tenant')"})
class WebFluxSliceTests {

  @TestConfiguration
  static class Time {
    @Bean
    ManualTicker ticker() {
      return new ManualTicker();
    }
  }

  @Autowired WebTestClient client;
  @Autowired RateLimitStore store;

  @AfterEach
  void forgetEveryLimit() {
    store.administration().orElseThrow().resetAll();
  }

  private WebTestClient.ResponseSpec chat(String tenant) {
    return client.get().uri("/reactive/chat").header("X-Tenant", tenant).exchange();
  }

  @Test
  void aRouteKeyedOnATenantHeaderLimitsEachTenant() {
    chat("acme").expectStatus().isOk().expectHeader().valueEquals("RateLimit", "\"chat\";r=1;t=60");
    chat("acme").expectStatus().isOk();
    chat("acme").expectStatus().isEqualTo(429).expectHeader().valueEquals("Retry-After", "60");
    chat("globex").expectStatus().isOk();
  }

  @Test
  void aRateLimitedMethodLimitsEachUserAndAResetForgetsIt() {
    for (int r = 1; r >= 0; r--) {
      client.get().uri("/reactive/hello?user=ann").exchange().expectStatus().isOk()
          .expectHeader().valueEquals("x-ratelimit-remaining-requests", Integer.toString(r));
    }
    client.get().uri("/reactive/hello?user=ann").exchange().expectStatus().isEqualTo(429)
        .expectHeader().valueEquals("retry-after-ms", "60000");
    store.administration().orElseThrow().resetAll();
    client.get().uri("/reactive/hello?user=ann").exchange().expectStatus().isOk();
  }
}
