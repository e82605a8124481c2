package io.github.llmratelimiter.core;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicLong;

/** A wall clock that a test sets and advances by hand, in milliseconds. */
public final class ManualClock implements InstantSource {

  private final AtomicLong millis;

  /**
   * Creates a clock at {@code start}.
   *
   * @param start the first reading
   */
  public ManualClock(Instant start) {
    this.millis = new AtomicLong(start.toEpochMilli());
  }

  @Override
  public Instant instant() {
    return Instant.ofEpochMilli(millis.get());
  }

  @Override
  public long millis() {
    return millis.get();
  }

  /**
   * Sets the clock to {@code at}.
   *
   * @param at the new reading
   * @return this clock
   */
  public ManualClock set(Instant at) {
    millis.set(at.toEpochMilli());
    return this;
  }

  /**
   * Moves the clock forward.
   *
   * @param duration how far
   * @return this clock
   */
  public ManualClock advance(Duration duration) {
    millis.addAndGet(duration.toMillis());
    return this;
  }
}
