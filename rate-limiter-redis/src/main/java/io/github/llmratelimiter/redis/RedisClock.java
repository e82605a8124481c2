package io.github.llmratelimiter.redis;

import java.util.concurrent.atomic.AtomicLong;

/**
 * This process's estimate of the Redis server's clock ({@code TIME}, microseconds), for the
 * deadlines of script calls: {@link #notAfter} never names a server time later than the real one
 * at a given local instant, so a call that a script runs before its deadline ran before the caller
 * stopped waiting.
 *
 * <p>Each reply carries the server time at which the script ran, {@code R}; it was read before
 * the reply arrived at local time {@code t}, so {@code R - t} is a lower bound of the offset between
 * the two clocks. The estimate is the largest such bound seen over the last one or two periods of
 * {@value #PERIOD_NANOS} ns, so that it follows the clocks' drift in both directions.
 */
final class RedisClock {

  static final long PERIOD_NANOS = 10_000_000_000L;
  private static final long UNKNOWN = Long.MIN_VALUE;

  private final AtomicLong current = new AtomicLong(UNKNOWN);
  private volatile long previous = UNKNOWN;
  private volatile long periodStart;

  RedisClock(long now) {
    this.periodStart = now;
  }

  /**
   * Takes one reply's server time.
   *
   * @param serverMicros the server's {@code TIME} when the script ran, in microseconds
   * @param receivedNanos this process's {@code System.nanoTime()} when the reply arrived
   */
  void sample(long serverMicros, long receivedNanos) {
    if (receivedNanos - periodStart >= PERIOD_NANOS) {
      synchronized (this) {
        if (receivedNanos - periodStart >= PERIOD_NANOS) {
          // the period's bound moves to previous before current is cleared, so that a reader
          // never sees neither
          previous = current.get();
          current.set(UNKNOWN);
          periodStart = receivedNanos;
        }
      }
    }
    long bound = serverMicros - receivedNanos / 1000;
    long seen = current.get();
    while (bound > seen && !current.compareAndSet(seen, bound)) {
      seen = current.get();
    }
  }

  /**
   * Returns a server time no later than the server's clock at local time {@code localNanos}, in
   * microseconds, or 0 before the first sample.
   *
   * @param localNanos a {@code System.nanoTime()} reading
   * @return the server time, or 0 when unknown
   */
  long notAfter(long localNanos) {
    long offset = Math.max(current.get(), previous);
    return offset == UNKNOWN ? 0 : localNanos / 1000 + offset;
  }
}
