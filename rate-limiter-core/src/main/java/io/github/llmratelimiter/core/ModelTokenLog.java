package io.github.llmratelimiter.core;

/**
 * The model-token window of one key: per reservation its id, its time and its amount, oldest
 * first, and their sum. Guarded by the owning {@link KeyEntry}'s lock; a key gets one only under a
 * budget that limits model tokens, so keys of other budgets carry none of it.
 */
final class ModelTokenLog {

  private static final long[] EMPTY = new long[0];

  private long[] ids = EMPTY;
  private long[] times = EMPTY;
  private long[] amounts = EMPTY;
  private int head;
  private int size;

  /** The sum of the amounts in the window (an under-estimate reconciled later may raise it). */
  private long sum;

  long sum() {
    return sum;
  }

  int size() {
    return size;
  }

  /** Drops the entries that are {@code windowNanos} or more before {@code now}. */
  void expire(long now, long windowNanos) {
    while (size > 0 && now - times[head] >= windowNanos) {
      sum -= amounts[head];
      head = head + 1 == times.length ? 0 : head + 1;
      size--;
    }
  }

  /** Appends an entry; the arrays grow without bound (the window bounds them). */
  void append(long id, long now, long amount) {
    if (size == times.length) {
      int capacity = times.length == 0 ? 1 : times.length * 2; // most keys hold one entry
      long[] grownIds = unroll(ids, capacity);
      long[] grownAmounts = unroll(amounts, capacity);
      times = unroll(times, capacity);
      ids = grownIds;
      amounts = grownAmounts;
      head = 0;
    }
    int tail = index(size);
    ids[tail] = id;
    times[tail] = now;
    amounts[tail] = amount;
    size++;
    sum += amount;
  }

  /** Sets the amount of reservation {@code id}; false when it has left the window. */
  boolean replace(long id, long amount) {
    for (int i = size - 1; i >= 0; i--) {
      int j = index(i);
      if (ids[j] == id) {
        sum += amount - amounts[j];
        amounts[j] = amount;
        return true;
      }
    }
    return false;
  }

  /** The time of the newest entry; the log must not be empty. */
  long newest() {
    return times[index(size - 1)];
  }

  /**
   * The position of the entry whose leaving brings the sum down by {@code excess} or more (the
   * oldest leave first), or -1 if even an empty window would not; its time is {@link #time}.
   */
  int freeing(long excess) {
    for (int i = 0; i < size; i++) {
      int j = index(i);
      excess -= amounts[j];
      if (excess <= 0) {
        return j;
      }
    }
    return -1;
  }

  /** The time of the entry at a position {@link #freeing} returned. */
  long time(int position) {
    return times[position];
  }

  private long[] unroll(long[] ring, int capacity) {
    long[] larger = new long[capacity];
    for (int i = 0; i < size; i++) {
      larger[i] = ring[index(i)];
    }
    return larger;
  }

  /** The ring index of the {@code i}-th oldest entry. */
  private int index(int i) {
    int j = head + i;
    return j >= times.length ? j - times.length : j;
  }
}
