package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractPlanChangeStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a 3-master Redis Cluster with keys in clear, passes the plan-change (limits that change per key) store TCK. */
class RedisClusterPlanChangeTckTests extends AbstractPlanChangeStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.cluster(ticker).build();
  }
}
