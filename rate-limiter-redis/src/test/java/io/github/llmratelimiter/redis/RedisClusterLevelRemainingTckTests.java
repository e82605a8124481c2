package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractLevelRemainingStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a 3-master Redis Cluster with keys in clear, passes the components TCK. */
class RedisClusterLevelRemainingTckTests extends AbstractLevelRemainingStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
