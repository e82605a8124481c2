package io.github.llmratelimiter.core;

import java.util.Arrays;

/**
 * The slots one key holds for calls in flight: per lease its id (the reservation's) and its
 * expiry, in no order. Guarded by the owning {@link KeyEntry}'s lock; a key gets one only under a
 * budget that limits concurrency. A lease counts while {@code now < expiry}; the arrays grow up to
 * the most leases held at once and never shrink, so taking and giving back slots allocates nothing
 * once they have grown.
 */
final class LeaseSet {

  private static final long[] EMPTY = new long[0];

  private long[] ids = EMPTY;
  private long[] expiries = EMPTY;
  private int size;
  /** The earliest expiry among the leases; meaningful only while {@code size > 0}. */
  private long earliest;

  /** The leases held, expired ones included until {@link #expire} drops them. */
  int size() {
    return size;
  }

  /** Drops the leases whose expiry is at or before {@code now}. */
  void expire(long now) {
    if (size == 0 || now - earliest < 0) {
      return;
    }
    for (int i = 0; i < size; ) {
      if (now - expiries[i] >= 0) {
        removeAt(i);
      } else {
        i++;
      }
    }
    recomputeEarliest();
  }

  /** The leases that still count at {@code now}, dropping none. */
  int liveAt(long now) {
    int live = 0;
    for (int i = 0; i < size; i++) {
      if (now - expiries[i] < 0) {
        live++;
      }
    }
    return live;
  }

  /**
   * The {@code k}-th earliest expiry, from 0: when {@code k + 1} leases have expired. The set must
   * hold more than {@code k} leases.
   */
  long expiryAt(int k) {
    if (k == 0) {
      return earliest;
    }
    long[] sorted = Arrays.copyOf(expiries, size); // only with more leases than a limit
    Arrays.sort(sorted);
    return sorted[k];
  }

  /** Adds lease {@code id}, which expires at {@code expiry}. */
  void add(long id, long expiry) {
    if (size == ids.length) {
      int capacity = Math.max(4, ids.length * 2);
      long[] grownIds = new long[capacity];
      long[] grownExpiries = new long[capacity];
      System.arraycopy(ids, 0, grownIds, 0, size);
      System.arraycopy(expiries, 0, grownExpiries, 0, size);
      ids = grownIds;
      expiries = grownExpiries;
    }
    if (size == 0 || expiry - earliest < 0) {
      earliest = expiry;
    }
    ids[size] = id;
    expiries[size] = expiry;
    size++;
  }

  /** Removes lease {@code id}; false when this set does not hold it. */
  boolean remove(long id) {
    for (int i = 0; i < size; i++) {
      if (ids[i] == id) {
        long expiry = expiries[i];
        removeAt(i);
        if (expiry == earliest) {
          recomputeEarliest();
        }
        return true;
      }
    }
    return false;
  }

  private void removeAt(int i) {
    size--;
    ids[i] = ids[size];
    expiries[i] = expiries[size];
  }

  private void recomputeEarliest() {
    if (size == 0) {
      return;
    }
    long e = expiries[0];
    for (int i = 1; i < size; i++) {
      if (expiries[i] - e < 0) {
        e = expiries[i];
      }
    }
    earliest = e;
  }
}
