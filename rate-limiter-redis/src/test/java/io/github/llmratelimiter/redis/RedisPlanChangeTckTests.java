package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractPlanChangeStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a standalone server with keys hashed, passes the plan-change (limits that change per key) store TCK. */
class RedisPlanChangeTckTests extends AbstractPlanChangeStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
