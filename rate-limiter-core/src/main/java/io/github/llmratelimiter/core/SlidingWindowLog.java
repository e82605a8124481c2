package io.github.llmratelimiter.core;

import java.time.Duration;

/**
 * A per-key sliding-window log: at most {@code limit} admitted calls within any window.
 *
 * <p>{@link #allow(String)} drops the key's timestamps that are a window or more old; when the
 * window is full it denies with {@link Reason#RPM_LIMIT}, appends nothing, and retries after
 * {@code oldest + window - now} (rounded up to the millisecond, at least 1); otherwise it appends
 * now and allows with {@code remaining = limit - size}. Thread-safe: each key has its own lock.
 *
 * <pre>{@code
 * SlidingWindowLog rpm = SlidingWindowLog.of(60, Duration.ofMinutes(1));
 * Decision d = rpm.allow("tenant-a");
 * }</pre>
 */
public final class SlidingWindowLog {

  private final Budget budget;
  private final RateLimitStore store;

  private SlidingWindowLog(Budget budget, RateLimitStore store) {
    this.budget = budget;
    this.store = store;
  }

  /**
   * Returns a log on the system ticker.
   *
   * @param limit calls admitted per window, at least 1
   * @param window the window's length, positive
   * @return a new log
   * @throws IllegalArgumentException on a bad limit or window
   */
  public static SlidingWindowLog of(long limit, Duration window) {
    return of(limit, window, Ticker.system());
  }

  /**
   * Returns a log that reads time from {@code ticker}.
   *
   * @param limit calls admitted per window, at least 1
   * @param window the window's length, positive
   * @param ticker the time source
   * @return a new log
   * @throws IllegalArgumentException on a bad limit, window or ticker
   */
  public static SlidingWindowLog of(long limit, Duration window, Ticker ticker) {
    Budget budget = new Budget("rpm", new WindowLimit(limit, window), null);
    return new SlidingWindowLog(budget, RateLimitStore.inMemory(ticker));
  }

  /**
   * Admits one call for {@code key} if the window has room.
   *
   * @param key the key, not blank
   * @return an {@link Reason#OK} or {@link Reason#RPM_LIMIT} decision
   * @throws IllegalArgumentException if the key is null or blank
   */
  public Decision allow(String key) {
    return store.acquire(budget, key, 1.0, Composition.SEQUENTIAL);
  }

  /**
   * Returns the limit and window of this log.
   *
   * @return the window limit
   */
  public WindowLimit limit() {
    return budget.window();
  }
}
