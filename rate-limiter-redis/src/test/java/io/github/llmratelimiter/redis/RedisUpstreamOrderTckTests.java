package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractUpstreamOrderTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/**
 * The Redis store, on a standalone server and with its default settings (keys and tenants hashed),
 * passes the order TCK: the order lives under the upstream's hash tag and {@code acquire.lua}
 * gates the upstream's admission by it in the same script.
 */
class RedisUpstreamOrderTckTests extends AbstractUpstreamOrderTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
