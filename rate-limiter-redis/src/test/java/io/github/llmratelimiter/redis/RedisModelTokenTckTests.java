package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.AbstractModelTokenStoreTests;
import io.github.llmratelimiter.core.RateLimitStore;

/** The Redis store, on a standalone server, passes the model-token (TPM) store TCK. */
class RedisModelTokenTckTests extends AbstractModelTokenStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
