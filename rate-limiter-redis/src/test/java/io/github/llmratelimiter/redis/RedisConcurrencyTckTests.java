package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractConcurrencyStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a standalone server with keys hashed, passes the concurrency (calls in flight) store TCK. */
class RedisConcurrencyTckTests extends AbstractConcurrencyStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
