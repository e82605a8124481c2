package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractUpstreamStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/**
 * The Redis store, on a standalone server and with its default settings (keys hashed), passes the
 * upstream TCK: one script decides the caller's levels and the upstream, whose keys carry their
 * own hash tag.
 */
class RedisUpstreamTckTests extends AbstractUpstreamStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }
}
