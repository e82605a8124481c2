package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractUpstreamStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/**
 * The Redis store, on a 3-master Redis Cluster and with keys in clear, passes the upstream TCK:
 * an upstream whose slot is not the root's is decided on its own slot first, the caller's levels
 * then, and the upstream's charge given back when they deny.
 */
class RedisClusterUpstreamTckTests extends AbstractUpstreamStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
