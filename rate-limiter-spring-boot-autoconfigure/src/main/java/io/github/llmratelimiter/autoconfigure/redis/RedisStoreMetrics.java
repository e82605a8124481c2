package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * The Redis store's meters, tagged only {@code store=redis}: {@code ratelimiter.store.errors}, a
 * counter of failed Redis calls (errors and timeouts), and {@code ratelimiter.store.degraded}, a
 * gauge that is 1 while the failure policy answers and 0 otherwise. On a Cluster both sum up the
 * masters: every master's failed calls, and 1 while the policy answers for any master's keys.
 */
final class RedisStoreMetrics implements MeterBinder {

  static final String ERRORS = "ratelimiter.store.errors";
  static final String DEGRADED = "ratelimiter.store.degraded";

  private final RedisRateLimitStore store;

  RedisStoreMetrics(RedisRateLimitStore store) {
    this.store = store;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    FunctionCounter.builder(ERRORS, store, RedisRateLimitStore::errorCount)
        .description("Calls to Redis that failed or timed out")
        .tag("store", "redis")
        .register(registry);
    Gauge.builder(DEGRADED, store, s -> s.degraded() ? 1 : 0)
        .description("1 while Redis does not answer and the failure policy decides, else 0")
        .tag("store", "redis")
        .register(registry);
  }
}
