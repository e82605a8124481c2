package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.AbstractRetryAdviceStoreTests;

/** The Redis store, on a standalone server, passes the retry-advice store TCK. */
class RedisRetryAdviceTckTests extends AbstractRetryAdviceStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
