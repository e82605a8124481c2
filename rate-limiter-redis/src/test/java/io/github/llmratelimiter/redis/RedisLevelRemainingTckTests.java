package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractLevelRemainingStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a standalone server with keys hashed, passes the components TCK. */
class RedisLevelRemainingTckTests extends AbstractLevelRemainingStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
