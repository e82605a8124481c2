package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;

/** {@link AbstractParityTests} on a standalone Redis. */
class StandaloneParityTests extends AbstractParityTests {

  @Override
  RedisRateLimitStore.Builder redis(Ticker ticker) {
    return TestRedis.standalone(ticker);
  }
}
