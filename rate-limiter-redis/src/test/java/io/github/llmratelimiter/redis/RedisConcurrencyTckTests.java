package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.AbstractConcurrencyStoreTests;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import java.time.Duration;

/**
 * The Redis store, on a standalone server with keys hashed, passes the concurrency (calls in flight) store TCK. Its holders of slots are further stores on the same prefix and ticker; a crash is modelled
 * by closing one: its connection closes and its renewals stop, and no release runs.
 */
class RedisConcurrencyTckTests extends AbstractConcurrencyStoreTests {

  private String prefix;
  private ManualTicker clock;

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    prefix = TestRedis.freshPrefix();
    clock = ticker;
    return TestRedis.standalone(ticker).keyPrefix(prefix).build();
  }

  @Override
  protected RateLimitStore newHolder(Duration slotLease) {
    return TestRedis.standalone(clock).keyPrefix(prefix).slotLease(slotLease).build();
  }

  @Override
  protected void renewSlots(RateLimitStore holder) {
    ((GuardedRedisStore) holder).renewSlots().join();
  }

  @Override
  protected void crash(RateLimitStore holder) {
    holder.close();
  }
}
