package io.github.llmratelimiter.core;

import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import org.jspecify.annotations.Nullable;

/**
 * The state of one key under one budget's name: its window log, its bucket, its model-token window
 * and its slots, guarded by this lock. The state holds no limit: every call applies the limits of
 * the budget or variant it carries ({@link BudgetTable}), and {@link #limits} remembers the last.
 *
 * <p>One lock covers every component, so no other caller of the key interleaves between the window
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

  /**
   * Bucket tokens as of {@code refilledAt}; {@link Double#POSITIVE_INFINITY} while the bucket is
   * fresh (untouched, or left full by a call): full at whatever capacity the next call has.
   */
  double tokens = Double.POSITIVE_INFINITY;

  /** When the bucket last regained tokens or was charged. */
  long refilledAt;

  /** The model-token window, present only under a budget that limits model tokens. */
  final @Nullable ModelTokenLog modelTokens;

  /** The slots held by calls in flight, present only under a budget that limits concurrency. */
  final @Nullable LeaseSet leases;

  /**
   * The limits of the last call that brought this entry to now (read by maintenance, which judges
   * freshness under them, as Redis expires a state).
   */
  BudgetTable limits;

  /** Set under the lock when the entry leaves its table; a caller that sees it looks up again. */
  boolean retired;

  /**
   * The entry of the next level that the same multi-level call holds locked, in level order;
   * written and read only by the holder of this entry's lock, and null once it is released.
   */
  @Nullable KeyEntry held;

  KeyEntry(String key, long now, BudgetTable limits) {
    this.key = key;
    this.modelTokens = limits.hasModelTokens ? new ModelTokenLog() : null;
    this.leases = limits.hasConcurrency ? new LeaseSet() : null;
    this.ring = new long[limits.hasWindow ? 1 : 0];
    this.refilledAt = now;
    this.limits = limits;
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
    if (getState() == 0) {
      throw new IllegalMonitorStateException("key entry '" + key + "' is not locked");
    }
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

  /** The {@code i}-th oldest timestamp ({@code 0 <= i < size}). */
  long at(int i) {
    int j = head + i;
    return ring[j >= ring.length ? j - ring.length : j];
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

  /** The timestamps less than {@code windowNanos} before {@code now}, dropping none. */
  int sizeAt(long now, long windowNanos) {
    int expired = 0;
    int i = head;
    while (expired < size && now - ring[i] >= windowNanos) {
      i = i + 1 == ring.length ? 0 : i + 1;
      expired++;
    }
    return size - expired;
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

  /**
   * Adds what a bucket short of {@code capacity} regained since the last refill, at {@code
   * refillPerNano}, up to capacity, and cuts a level above {@code capacity} down to it. The time of
   * the last refill moves only when tokens are regained (or charged: {@link #charge}), so a full
   * bucket remembers since when it could have refilled, as the Redis store does.
   */
  void refill(long now, double capacity, double refillPerNano) {
    long elapsed = now - refilledAt;
    if (elapsed > 0 && tokens < capacity) {
      tokens = Math.min(capacity, tokens + elapsed * refillPerNano);
      refilledAt = now;
    } else if (tokens > capacity) {
      tokens = capacity;
    }
  }

  /** The tokens {@link #refill} would leave at {@code now}, changing nothing. */
  double tokensAt(long now, double capacity, double refillPerNano) {
    long elapsed = now - refilledAt;
    return elapsed > 0 && tokens < capacity
        ? Math.min(capacity, tokens + elapsed * refillPerNano)
        : Math.min(capacity, tokens);
  }

  /** Takes {@code cost} from a bucket brought to {@code now}, at least down to 0. */
  void charge(long now, double cost) {
    if (now - refilledAt > 0) {
      refilledAt = now;
    }
    tokens = Math.max(0, tokens - cost);
  }
}
