package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.AbstractRateLimitStoreTests;

/** The Redis store, on a 3-master Redis Cluster and with keys in clear, passes the store TCK. */
class RedisClusterRateLimitStoreTckTests extends AbstractRateLimitStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
