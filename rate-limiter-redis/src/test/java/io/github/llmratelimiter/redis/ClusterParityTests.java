package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;

/** {@link AbstractParityTests} on a 3-master Redis Cluster. */
class ClusterParityTests extends AbstractParityTests {

  @Override
  RedisRateLimitStore.Builder redis(Ticker ticker) {
    return TestRedis.cluster(ticker);
  }
}
