package io.github.llmratelimiter.core;

import java.util.concurrent.locks.ReentrantLock;

/**
 * The state of one key under one budget: its window log and its bucket, guarded by this lock.
 *
 * <p>One lock covers both components, so no other caller of the key interleaves between the window
 * check and the bucket check. The timestamps are primitive {@code long}s in a ring buffer that
 * grows up to the window's limit, so an admitted call allocates nothing once the ring has grown.
 */
@SuppressWarnings("serial")
final class KeyEntry extends ReentrantLock {

  final String key;

  /** Admission timestamps in nanoseconds, oldest at {@code head}, {@code size} of them. */
  long[] ring;

  int head;
  int size;

  /** Bucket tokens as of {@code refilledAt}. */
  double tokens;

  long refilledAt;

  /** Set under the lock when the entry leaves its table; a caller that sees it looks up again. */
  boolean retired;

  KeyEntry(String key, int initialRing, double tokens, long now) {
    this.key = key;
    this.ring = new long[initialRing];
    this.tokens = tokens;
    this.refilledAt = now;
  }

  long oldest() {
    return ring[head];
  }

  long newest() {
    int i = head + size - 1;
    return ring[i >= ring.length ? i - ring.length : i];
  }

  /** Drops timestamps that are {@code windowNanos} or more before {@code now}. */
  void expire(long now, long windowNanos) {
    while (size > 0 && now - ring[head] >= windowNanos) {
      head = head + 1 == ring.length ? 0 : head + 1;
      size--;
    }
  }

  /** Appends {@code now}, growing the ring up to {@code limit} slots. */
  void append(long now, int limit) {
    if (size == ring.length) {
      grow(limit);
    }
    int tail = head + size;
    ring[tail >= ring.length ? tail - ring.length : tail] = now;
    size++;
  }

  private void grow(int limit) {
    int capacity = (int) Math.min(limit, Math.max(4L, ring.length * 2L));
    long[] larger = new long[capacity];
    for (int i = 0; i < size; i++) {
      int j = head + i;
      larger[i] = ring[j >= ring.length ? j - ring.length : j];
    }
    ring = larger;
    head = 0;
  }

  /** Adds what the bucket regained since the last refill, at {@code refillPerNano}, up to capacity. */
  void refill(long now, double capacity, double refillPerNano) {
    long elapsed = now - refilledAt;
    if (elapsed > 0) {
      tokens = Math.min(capacity, tokens + elapsed * refillPerNano);
      refilledAt = now;
    }
  }
}
