package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

/**
 * A store that denies with {@link Reason#STORE_UNAVAILABLE} (a distributed store under a
 * fail-closed policy while its backend is down) gets a 503 problem with the store's retry time, not
 * a 429, through the route interceptor and the annotation alike. (RedisStoreWebTests shows the same
 * with a real Redis stopped.)
 */
class StoreUnavailableWebTests {

  private static final String KEY = "sk-test-0123456789abcd";

  @ParameterizedTest
  @CsvSource({"/v1/routed, routed, 1500, 2", "/annotated, annotated, 1500, 2",
      "/v1/routed, routed, 1000, 1", "/v1/routed, routed, 1, 1"})
  void storeUnavailableDenyIs503WithRetryAfterRoundedUp(
      String path, String policy, long retryMs, String retryAfter) {
    new WebApplicationContextRunner()
        .withConfiguration(TestGateway.MVC)
        .withUserConfiguration(TestGateway.class)
        .withBean(RateLimitStore.class, () -> new UnavailableStore(retryMs))
        .withPropertyValues("ratelimiter.policies.routed.rpm.limit=3",
            "ratelimiter.policies.annotated.rpm.limit=2",
            "ratelimiter.web.routes[0].include=/v1/**", "ratelimiter.web.routes[0].policy=routed")
        .run(context -> {
          assertThat(context).hasNotFailed();
          MockMvc mvc = MockMvcBuilders
              .webAppContextSetup((WebApplicationContext) context.getSourceApplicationContext()).build();
          mvc.perform(get(path).header("Authorization", "Bearer " + KEY))
              .andExpect(status().isServiceUnavailable())
              .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
              .andExpect(header().string("Retry-After", retryAfter))
              .andExpect(header().string("retry-after-ms", Long.toString(retryMs)))
              .andExpect(header().doesNotExist("RateLimit"))
              .andExpect(content().json("{\"status\":503,\"title\":\"Service Unavailable\",\"policy\":\""
                  + policy + "\",\"retryAfterMs\":" + retryMs + ",\"instance\":\"" + path + "\"}"));
        });
  }

  /** Denies every call as a fail-closed distributed store does while its backend is down. */
  private record UnavailableStore(long retryMs) implements RateLimitStore {

    @Override
    public Decision acquire(List<Budget> levels, List<String> keys, double cost, Composition composition) {
      return Decision.retryableDeny(Reason.STORE_UNAVAILABLE, 0, retryMs, 0, levels.get(0).name());
    }

    @Override
    public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
        long estimatedModelTokens, Composition composition) {
      return new Reservation(acquire(levels, keys, cost, composition), levels, keys,
          estimatedModelTokens, 0, 0, 0);
    }

    @Override
    public void reconcile(Reservation reservation, long actualModelTokens) {
      // a denied call reserved nothing
    }

    @Override
    public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {
      // the store cannot be reached: the charge is lost, as a distributed store's would be
    }

    @Override
    public void release(Reservation reservation) {
      // a denied call holds no slot
    }
  }
}
