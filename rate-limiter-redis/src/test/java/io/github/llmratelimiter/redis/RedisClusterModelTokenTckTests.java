package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.AbstractModelTokenStoreTests;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a 3-master Redis Cluster, passes the model-token (TPM) store TCK. */
class RedisClusterModelTokenTckTests extends AbstractModelTokenStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
