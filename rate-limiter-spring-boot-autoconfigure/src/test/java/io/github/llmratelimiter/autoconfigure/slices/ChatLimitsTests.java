package io.github.llmratelimiter.autoconfigure.slices;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Bean;
import org.springframework.test.web.servlet.MockMvc;

@WebMvcTest(controllers = ChatController.class, properties = {
    "ratelimiter.policies.chat.rpm.limit=2",
    "ratelimiter.web.routes[0].include=/v1/chat",
    "ratelimiter.web.routes[0].policy=chat",
    "ratelimiter.web.routes[0].key-expression=header('X-Tenant')"})
class ChatLimitsTests {

  // time moves only when a test moves it
  static final class TestTicker implements Ticker {
    private final AtomicLong nanos = new AtomicLong();

    @Override
    public long read() {
      return nanos.get();
    }

    void advance(Duration duration) {
      nanos.addAndGet(duration.toNanos());
    }
  }

  @TestConfiguration
  static class Time {
    @Bean
    TestTicker ticker() { // the limiter reads time from the application's Ticker bean
      return new TestTicker();
    }
  }

  @Autowired MockMvc mvc;
  @Autowired TestTicker ticker;
  @Autowired RateLimitStore store;

  @AfterEach
  void forgetEveryLimit() {
    // every test starts with full budgets, in memory or on Redis
    store.administration().orElseThrow().resetAll();
  }

  @Test
  void aRouteKeyedOnATenantHeaderLimitsEachTenant() throws Exception {
    mvc.perform(get("/v1/chat").header("X-Tenant", "acme")).andExpect(status().isOk())
        .andExpect(header().string("RateLimit", "\"chat\";r=1;t=60"))
        .andExpect(header().string("x-ratelimit-remaining-requests", "1"));
    mvc.perform(get("/v1/chat").header("X-Tenant", "acme")).andExpect(status().isOk());
    mvc.perform(get("/v1/chat").header("X-Tenant", "acme"))
        .andExpect(status().isTooManyRequests())
        .andExpect(header().string("Retry-After", "60"));
    mvc.perform(get("/v1/chat").header("X-Tenant", "globex")).andExpect(status().isOk());

    ticker.advance(Duration.ofMinutes(1)); // the window slides: acme may call again
    mvc.perform(get("/v1/chat").header("X-Tenant", "acme")).andExpect(status().isOk());
  }

  @Test
  void aRateLimitedMethodLimitsEachUser() throws Exception {
    mvc.perform(get("/v1/hello?user=ann")).andExpect(status().isOk());
    mvc.perform(get("/v1/hello?user=ann")).andExpect(status().isOk());
    mvc.perform(get("/v1/hello?user=ann"))
        .andExpect(status().isTooManyRequests())
        .andExpect(header().string("retry-after-ms", "60000"));
  }

  @Test
  void aResetGivesEveryKeyAFullBudgetAgain() throws Exception {
    mvc.perform(get("/v1/hello?user=bob"));
    mvc.perform(get("/v1/hello?user=bob"));
    mvc.perform(get("/v1/hello?user=bob")).andExpect(status().isTooManyRequests());

    store.administration().orElseThrow().resetAll();

    mvc.perform(get("/v1/hello?user=bob")).andExpect(status().isOk())
        .andExpect(header().string("x-ratelimit-remaining-requests", "1"));
  }
}
