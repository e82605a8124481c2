package io.github.llmratelimiter.autoconfigure.memory;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The health of the in-memory rate-limit store: always {@code UP} (it lives in this process, so it
 * answers whenever the application does). Details: the store type, the cap on keys tracked per
 * budget, the keys tracked in all budgets, the fullest budget's use of the cap ({@code capUsage},
 * from 0 to 1: at 1 that budget denies new keys with {@code TRACKED_KEYS_LIMIT}), and the keys
 * tracked per budget; never a key.
 */
final class InMemoryStoreHealthIndicator extends AbstractHealthIndicator {

  private final StoreAdministration store;
  private final RateLimitPolicies policies;
  private final long maxKeysPerBudget;

  InMemoryStoreHealthIndicator(RateLimitStore store, RateLimitPolicies policies, long maxKeysPerBudget) {
    super("In-memory rate-limit store health check failed");
    this.store = store.administration().orElseThrow(); // the in-memory store always offers it
    this.policies = policies;
    this.maxKeysPerBudget = maxKeysPerBudget;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    List<Budget> budgets = policies.allBudgets().stream()
        .sorted(Comparator.comparing(Budget::name)).toList();
    Map<String, Long> perBudget = new LinkedHashMap<>();
    long total = 0;
    long fullest = 0;
    for (Budget b : budgets) {
      long tracked = store.trackedKeys(b);
      perBudget.putIfAbsent(b.name(), tracked);
    }
    for (long tracked : perBudget.values()) {
      total += tracked;
      fullest = Math.max(fullest, tracked);
    }
    builder.up()
        .withDetail("store", "memory")
        .withDetail("maxKeysPerBudget", maxKeysPerBudget)
        .withDetail("trackedKeys", total)
        .withDetail("capUsage", (double) fullest / maxKeysPerBudget)
        .withDetail("budgets", perBudget);
  }
}
