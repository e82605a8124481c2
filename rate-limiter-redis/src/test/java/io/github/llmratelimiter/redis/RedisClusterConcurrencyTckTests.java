package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractConcurrencyStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a 3-master Redis Cluster with keys in clear, passes the concurrency (calls in flight) store TCK. */
class RedisClusterConcurrencyTckTests extends AbstractConcurrencyStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
