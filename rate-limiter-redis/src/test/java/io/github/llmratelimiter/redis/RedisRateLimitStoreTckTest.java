package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.RateLimitStoreTck;

/** The Redis store, on a standalone server, passes the store TCK. */
class RedisRateLimitStoreTckTest extends RateLimitStoreTck {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
