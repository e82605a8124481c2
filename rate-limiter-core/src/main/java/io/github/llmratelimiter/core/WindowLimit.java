package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.Duration;

/**
 * The limit of a sliding-window log: at most {@code limit} admitted calls within any {@code window}.
 *
 * @param limit the number of calls admitted per window, at least 1
 * @param window the window's length, positive and at most about 292 years
 */
public record WindowLimit(long limit, Duration window) {

  /** The default window length: one minute (requests per minute). */
  public static final Duration DEFAULT_WINDOW = Duration.ofMinutes(1);

  /**
   * Validates the limit.
   *
   * @throws IllegalArgumentException if {@code limit <= 0}, or {@code window} is null, zero or
   *     negative
   */
  public WindowLimit {
    Args.positive("limit", limit);
    Args.positive("window", window);
    if (limit > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(
          "limit must be <= " + (Integer.MAX_VALUE - 8) + ", but was " + limit);
    }
    try {
      window.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("window must fit in a long of nanoseconds, but was " + window, e);
    }
  }

  /**
   * Returns a limit of {@code limit} calls per minute.
   *
   * @param limit calls per minute
   * @return the window limit
   */
  public static WindowLimit perMinute(long limit) {
    return new WindowLimit(limit, DEFAULT_WINDOW);
  }
}
