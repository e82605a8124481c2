package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;

/** {@link ParityTest} on a standalone Redis. */
class StandaloneParityTest extends ParityTest {

  @Override
  RedisRateLimitStore.Builder redis(Ticker ticker) {
    return TestRedis.standalone(ticker);
  }
}
