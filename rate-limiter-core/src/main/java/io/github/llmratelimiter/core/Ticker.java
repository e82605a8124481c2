package io.github.llmratelimiter.core;

/**
 * A source of monotonic time in nanoseconds, injected so that tests control time exactly.
 *
 * <p>Only differences between two readings are meaningful. Production code uses {@link #system()};
 * tests supply a ticker they advance by hand.
 */
@FunctionalInterface
public interface Ticker {

  /**
   * Returns the current reading in nanoseconds; successive readings never decrease.
   *
   * @return the current time in nanoseconds from an arbitrary origin
   */
  long read();

  /**
   * Returns the ticker backed by {@link System#nanoTime()}.
   *
   * @return the system's monotonic ticker
   */
  static Ticker system() {
    return System::nanoTime;
  }
}
