package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractUpstreamOrderTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/**
 * The Redis store, on a 3-master Redis Cluster and with keys in clear (tenants still hashed),
 * passes the order TCK: {@code upstream-acquire.lua} gates the upstream's admission on its own
 * slot, and the caller's levels are decided on the root's.
 */
class RedisClusterUpstreamOrderTckTests extends AbstractUpstreamOrderTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
