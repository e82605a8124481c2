package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.PlanChangeStoreTck;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a standalone server with keys hashed, passes the plan-change (limits that change per key) store TCK. */
class RedisPlanChangeTckTest extends PlanChangeStoreTck {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
