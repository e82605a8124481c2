package io.github.llmratelimiter.core;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A ticker that only moves when a test advances it; starts far from zero to catch origin bugs. */
public final class ManualTicker implements Ticker {

  /** The first reading of every new ticker. */
  public static final long ORIGIN = 1_000_000_000_000L;

  private final AtomicLong nanos = new AtomicLong(ORIGIN);

  @Override
  public long read() {
    return nanos.get();
  }

  /** Moves time forward by {@code duration}. */
  public ManualTicker advance(Duration duration) {
    return advanceNanos(duration.toNanos());
  }

  /** Moves time forward by {@code millis} milliseconds. */
  public ManualTicker advanceMillis(long millis) {
    return advanceNanos(millis * 1_000_000L);
  }

  /** Moves time forward by {@code delta} nanoseconds. */
  public ManualTicker advanceNanos(long delta) {
    if (delta < 0) {
      throw new IllegalArgumentException("delta must be >= 0, but was " + delta);
    }
    nanos.addAndGet(delta);
    return this;
  }
}
