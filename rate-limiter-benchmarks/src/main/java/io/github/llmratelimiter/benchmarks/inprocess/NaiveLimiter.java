package io.github.llmratelimiter.benchmarks.inprocess;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The naive baseline: what a team writes in an afternoon. Per key, in a {@link ConcurrentHashMap},
 * an {@code ArrayDeque<Long>} log of admitted calls and a token bucket, both under the entry's
 * monitor, in sequential order (window, then bucket; a burst deny keeps its timestamp).
 */
final class NaiveLimiter {

  private final int limit;
  private final long windowNanos;
  private final double capacity;
  private final double refillPerNano;
  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

  NaiveLimiter(int limit, Duration window, double capacity, double refillPerSecond) {
    this.limit = limit;
    this.windowNanos = window.toNanos();
    this.capacity = capacity;
    this.refillPerNano = refillPerSecond / 1e9;
  }

  /** Admits one call for {@code key} if its window has room and its bucket a token. */
  boolean allow(String key) {
    Entry e = entries.computeIfAbsent(key, k -> new Entry(capacity, System.nanoTime()));
    synchronized (e) {
      long now = System.nanoTime();
      while (!e.log.isEmpty() && now - e.log.peekFirst() >= windowNanos) {
        e.log.pollFirst();
      }
      if (e.log.size() >= limit) {
        return false;
      }
      e.log.addLast(now);
      e.tokens = Math.min(capacity, e.tokens + (now - e.refilledAt) * refillPerNano);
      e.refilledAt = now;
      if (e.tokens < 1) {
        return false;
      }
      e.tokens -= 1;
      return true;
    }
  }

  private static final class Entry {

    final ArrayDeque<Long> log = new ArrayDeque<>();
    double tokens;
    long refilledAt;

    Entry(double tokens, long now) {
      this.tokens = tokens;
      this.refilledAt = now;
    }
  }
}
