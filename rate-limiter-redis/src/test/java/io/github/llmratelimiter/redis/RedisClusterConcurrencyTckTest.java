package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ConcurrencyStoreTck;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a 3-master Redis Cluster with keys in clear, passes the concurrency (calls in flight) store TCK. */
class RedisClusterConcurrencyTckTest extends ConcurrencyStoreTck {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
