package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A ticker that moves only when a test advances it. */
final class TestTicker implements Ticker {

  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

  @Override
  public long read() {
    return nanos.get();
  }

  void advance(Duration d) {
    advanceNanos(d.toNanos());
  }

  void advanceNanos(long n) {
    nanos.addAndGet(n);
  }
}
