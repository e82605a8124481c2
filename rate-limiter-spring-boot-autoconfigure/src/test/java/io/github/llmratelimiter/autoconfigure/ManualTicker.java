package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A ticker that tests advance by hand: time passes only when a test says so. */
public final class ManualTicker implements Ticker {

  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

  @Override
  public long read() {
    return nanos.get();
  }

  /**
   * Moves time forward.
   *
   * @param duration how far
   */
  public void advance(Duration duration) {
    nanos.addAndGet(duration.toNanos());
  }
}
