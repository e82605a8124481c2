package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.AbstractRateLimitStoreTests;

/**
 * The Redis store, on a standalone server and with its default settings (keys hashed), passes the
 * store TCK; {@code top} names keys by their hashed form. (The Cluster run keeps keys in clear.)
 */
class RedisRateLimitStoreTckTests extends AbstractRateLimitStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return TestRedis.standalone(ticker).build();
  }

  @Override
  protected String topKey(String key) {
    return RedisRateLimitStore.hashedKey(key);
  }
}
