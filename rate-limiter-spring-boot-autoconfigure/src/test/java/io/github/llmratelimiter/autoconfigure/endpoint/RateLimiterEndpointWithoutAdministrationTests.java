package io.github.llmratelimiter.autoconfigure.endpoint;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.ForwardingStore;
import io.github.llmratelimiter.gateway.internal.KeyIds;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The endpoint on a store that decides but offers no administration: it lists no budget, shows a
 * key's plan without state, and resets nothing, while the state stays where the store keeps it.
 */
class RateLimiterEndpointWithoutAdministrationTests {

  private static final String KEY = "sk-no-admin-0123456789";

  @Test
  void aStoreWithoutAdministrationListsNoBudgetShowsNoStateAndResetsNothing() {
    try (RateLimitStore memory = RateLimitStore.inMemory()) {
      RateLimitStore decisionsOnly = new ForwardingStore(memory) {
        @Override
        public Optional<StoreAdministration> administration() {
          return Optional.empty();
        }
      };
      RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
          .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null))
          .build();
      RateLimitPolicy policy = policies.policy(null);
      RateLimitKey key = RateLimitKey.of(KEY, null);
      Budget budget = policy.budgets(key).get(0);
      String stored = policy.keys(key).get(0);
      assertThat(decisionsOnly.acquire(budget, stored, 1, Composition.SEQUENTIAL).allowed()).isTrue();
      RateLimiterEndpoint endpoint =
          new RateLimiterEndpoint(decisionsOnly, policies, KeyIds.random(), 20, 100);

      assertThat(endpoint.report(null).budgets()).isEmpty();
      assertThat(endpoint.key(KEY, null)).as("no state, no assignment").isNull();
      assertThat(endpoint.reset(KEY, null).reset()).isZero();
      assertThat(memory.administration().orElseThrow().inspect(budget, stored))
          .as("the state is still charged").hasValueSatisfying(s ->
              assertThat(s.windowUsed()).isEqualTo(1));
    }
  }
}
