package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.AbstractRetryAdviceStoreTests;

/** The Redis store, on a 3-master Redis Cluster, passes the retry-advice store TCK. */
class RedisClusterRetryAdviceTckTests extends AbstractRetryAdviceStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
