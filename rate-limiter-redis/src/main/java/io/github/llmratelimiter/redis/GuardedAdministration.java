package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaSpend;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.internal.Args;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The administration of a {@link GuardedRedisStore}: Redis's, under the same circuit breaker as
 * decisions (on a Cluster, whose calls read every master, under all of them: see {@link
 * RedisMasters#call}). While the breaker is open (on a Cluster, any master's is other than closed)
 * or Redis fails, the local fallback answers from this instance's share if there is one, else the
 * call throws an {@link IllegalStateException}; {@link #resetAll} always throws then.
 */
final class GuardedAdministration implements StoreAdministration {

  private final LuaRateLimitStore store;
  private final RedisAdministration redis;
  /** The breakers of the masters, under which every call here runs (each reads every master). */
  private final RedisMasters breaker;
  private final @Nullable FallbackStore fallback;

  GuardedAdministration(LuaRateLimitStore store, RedisMasters breaker,
      @Nullable FallbackStore fallback) {
    this.store = store;
    this.redis = store.redisAdministration();
    this.breaker = breaker;
    this.fallback = fallback;
  }

  @Override
  public Optional<KeySnapshot> inspect(Budget budget, String key) {
    Args.notBlank("key", key);
    store.budget(budget);
    FallbackStore f = fallback;
    return breaker.call(() -> redis.inspect(budget, key),
        f == null ? null : () -> local(f).inspect(f.scaled(budget), key));
  }

  @Override
  public List<KeySnapshot> top(Budget budget, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
    }
    store.budget(budget);
    FallbackStore f = fallback;
    return breaker.call(() -> redis.top(budget, limit),
        f == null ? null : () -> local(f).top(f.scaled(budget), limit));
  }

  @Override
  public boolean reset(Budget budget, String key) {
    Args.notBlank("key", key);
    store.budget(budget);
    FallbackStore f = fallback;
    return breaker.call(() -> redis.reset(budget, key),
        f == null ? null : () -> local(f).reset(f.scaled(budget), key));
  }

  /**
   * {@inheritDoc}
   *
   * <p>It forgets the state in Redis (every key under the store's prefix but the live-instance
   * set), and the fallback's local state; while Redis does not answer, it throws whatever the
   * policy: a reset that left Redis's counts in place would not be one.
   */
  @Override
  public void resetAll() {
    breaker.call(() -> {
      redis.resetAll();
      return null;
    }, fallback == null ? null : () -> {
      throw new IllegalStateException("the Redis rate-limit store is unavailable");
    });
    if (fallback != null) {
      fallback.resetAll();
    }
  }

  @Override
  public long trackedKeys(Budget budget) {
    store.budget(budget);
    FallbackStore f = fallback;
    return breaker.call(() -> redis.trackedKeys(budget),
        f == null ? null : () -> local(f).trackedKeys(f.scaled(budget)));
  }

  /**
   * {@inheritDoc}
   *
   * <p>While Redis does not answer, the fallback's share answers: what this instance counted
   * locally, against the share's limits.
   */
  @Override
  public List<QuotaStatus> quotas(Budget budget, String key) {
    Args.notBlank("key", key);
    store.budget(budget);
    FallbackStore f = fallback;
    return breaker.call(() -> redis.quotas(budget, key),
        f == null ? null : () -> local(f).quotas(f.scaled(budget), key));
  }

  /**
   * {@inheritDoc}
   *
   * <p>While Redis does not answer, the fallback's share answers: what this instance counted
   * locally.
   */
  @Override
  public List<QuotaSpend> topSpenders(Budget budget, QuotaLimit quota, int limit) {
    Args.notNull("quota", quota);
    Args.positive("limit", limit);
    store.budget(budget);
    FallbackStore f = fallback;
    return breaker.call(() -> redis.topSpenders(budget, quota, limit),
        f == null ? null : () -> local(f).topSpenders(f.scaled(budget), quota, limit));
  }

  /** The administration of this instance's share in the fallback. */
  private static StoreAdministration local(FallbackStore fallback) {
    return fallback.store().administration().orElseThrow();
  }
}
