package io.github.llmratelimiter.redis;

/** What the Spring tests read of a Redis store beyond its public API (test-jar only). */
public final class RedisStores {

  private RedisStores() {}

  /**
   * Returns the live instance count the store's fallback shares are taken for.
   *
   * @param store a store built by {@link RedisRateLimitStore#builder}
   * @return the count, 1 without a local fallback
   */
  public static int liveInstances(RedisRateLimitStore store) {
    return ((GuardedRedisStore) store).liveInstances();
  }

  /**
   * Returns whether calls Redis admits must also fit the store's share of the local fallback, as
   * they must for a short time after an outage.
   *
   * @param store a store built by {@link RedisRateLimitStore#builder}
   * @return whether some master's hold is on
   */
  public static boolean holding(RedisRateLimitStore store) {
    return ((GuardedRedisStore) store).holding();
  }

  /**
   * Returns how many calls answered by the policy were refunded on Redis when their reply came.
   *
   * @param store a store built by {@link RedisRateLimitStore#builder}
   * @return the count
   */
  public static long refundCount(RedisRateLimitStore store) {
    return ((GuardedRedisStore) store).refundCount();
  }
}
