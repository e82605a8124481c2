package io.github.llmratelimiter.core;

import java.util.concurrent.locks.AbstractQueuedSynchronizer;

/**
 * The state of one key under one budget: its window log and its bucket, guarded by this lock.
 *
 * <p>One lock covers both components, so no other caller of the key interleaves between the window
 * check and the bucket check. The timestamps are primitive {@code long}s in a ring buffer that
 * grows up to the window's limit, so an admitted call allocates nothing once the ring has grown.
 *
 * <p>The lock is this object itself: an exclusive, non-reentrant {@link
 * AbstractQueuedSynchronizer} (state 1 while held), so the lock's state shares the entry's memory
 * instead of sitting in a separate object one more pointer away, as a {@code ReentrantLock}'s does.
 * No caller ever takes an entry's lock twice (levels of one call are distinct tables), and a waiter
 * parks rather than pins its carrier, so virtual threads can wait on it too.
 */
@SuppressWarnings("serial")
final class KeyEntry extends AbstractQueuedSynchronizer {

  final String key;

  /** Admission timestamps in nanoseconds, oldest at {@code head}, {@code size} of them. */
  long[] ring;

  int head;
  int size;

  /** Bucket tokens as of {@code refilledAt}. */
  double tokens;

  long refilledAt;

  /** Model-token window: reservation ids, timestamps and amounts, oldest at {@code tpmHead}. */
  long[] tpmIds = EMPTY;

  long[] tpmTimes = EMPTY;
  long[] tpmTokens = EMPTY;
  int tpmHead;
  int tpmSize;

  /** The sum of {@code tpmTokens} in the window. */
  long tpmSum;

  private static final long[] EMPTY = new long[0];

  /** Set under the lock when the entry leaves its table; a caller that sees it looks up again. */
  boolean retired;

  KeyEntry(String key, int initialRing, double tokens, long now) {
    this.key = key;
    this.ring = new long[initialRing];
    this.tokens = tokens;
    this.refilledAt = now;
  }

  /** Takes the lock, waiting for it if another thread holds it. */
  void lock() {
    if (!compareAndSetState(0, 1)) {
      acquire(1);
    }
  }

  /** Takes the lock only if it is free now. */
  boolean tryLock() {
    return compareAndSetState(0, 1);
  }

  /** Releases the lock, which the caller holds. */
  void unlock() {
    release(1);
  }

  @Override
  protected boolean tryAcquire(int ignored) {
    return compareAndSetState(0, 1);
  }

  @Override
  protected boolean tryRelease(int ignored) {
    setState(0);
    return true;
  }

  @Override
  protected boolean isHeldExclusively() {
    return getState() == 1;
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

  /** Drops model-token entries that are {@code windowNanos} or more before {@code now}. */
  void expireModelTokens(long now, long windowNanos) {
    while (tpmSize > 0 && now - tpmTimes[tpmHead] >= windowNanos) {
      tpmSum -= tpmTokens[tpmHead];
      tpmHead = tpmHead + 1 == tpmTimes.length ? 0 : tpmHead + 1;
      tpmSize--;
    }
  }

  /** Appends a model-token entry; the arrays grow without bound (the window bounds them). */
  void appendModelTokens(long id, long now, long tokens) {
    if (tpmSize == tpmTimes.length) {
      int capacity = Math.max(4, tpmTimes.length * 2);
      long[] ids = unroll(tpmIds, capacity);
      long[] tokensRing = unroll(tpmTokens, capacity);
      tpmTimes = unroll(tpmTimes, capacity);
      tpmIds = ids;
      tpmTokens = tokensRing;
      tpmHead = 0;
    }
    int tail = tpmIndex(tpmSize);
    tpmIds[tail] = id;
    tpmTimes[tail] = now;
    tpmTokens[tail] = tokens;
    tpmSize++;
    tpmSum += tokens;
  }

  private long[] unroll(long[] ring, int capacity) {
    long[] larger = new long[capacity];
    for (int i = 0; i < tpmSize; i++) {
      larger[i] = ring[tpmIndex(i)];
    }
    return larger;
  }

  /** The ring index of the {@code i}-th oldest model-token entry. */
  int tpmIndex(int i) {
    int j = tpmHead + i;
    return j >= tpmTimes.length ? j - tpmTimes.length : j;
  }

  /** The ring index of the entry of reservation {@code id}, or -1 when it has left the window. */
  int findModelTokens(long id) {
    for (int i = tpmSize - 1; i >= 0; i--) {
      int j = tpmIndex(i);
      if (tpmIds[j] == id) {
        return j;
      }
    }
    return -1;
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
