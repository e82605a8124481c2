package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;

/** {@link ParityTest} on a 3-master Redis Cluster. */
class ClusterParityTest extends ParityTest {

  @Override
  RedisRateLimitStore.Builder redis(Ticker ticker) {
    return TestRedis.cluster(ticker);
  }
}
