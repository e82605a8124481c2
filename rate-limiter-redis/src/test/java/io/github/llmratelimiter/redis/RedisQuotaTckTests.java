package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractQuotaStoreTests;
import io.github.llmratelimiter.core.ManualClock;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;

/**
 * The Redis store, on a standalone server with keys hashed (its default), passes the quota TCK;
 * {@code topSpenders} names keys by their hashed form. (The Cluster run keeps keys in clear.)
 */
class RedisQuotaTckTests extends AbstractQuotaStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker, ManualClock clock) {
    return TestRedis.standalone(ticker).wallClock(clock).build();
  }

  @Override
  protected String topKey(String key) {
    return RedisRateLimitStore.hashedKey(key);
  }
}
