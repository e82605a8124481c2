package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.gateway.AbstractHeaderItemsTests;
import io.github.llmratelimiter.redis.FailurePolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RedisServer;
import java.time.InstantSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * The header items on the Redis store, on a real redis-server of its own: the same figures item by
 * item as on the in-memory store (the Redis store reads time from the test's clocks).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisHeaderItemsTests extends AbstractHeaderItemsTests {

  private RedisServer server;

  @BeforeAll
  void startRedis() {
    server = RedisServer.start();
  }

  @AfterAll
  void stopRedis() {
    server.close();
  }

  @Override
  protected RateLimitStore newStore(Ticker ticker, InstantSource clock) {
    return RedisRateLimitStore.builder("redis://127.0.0.1:" + server.port())
        .failurePolicy(FailurePolicy.FAIL_CLOSED)
        .slotLease(ConcurrencyLimit.MAX_LEASE) // slots count until released, as in memory
        .ticker(ticker)
        .wallClock(clock)
        .build();
  }
}
