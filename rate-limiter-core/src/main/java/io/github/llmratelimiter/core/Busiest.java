package io.github.llmratelimiter.core;

import java.util.Arrays;

/**
 * The busiest entries offered so far, at most a fixed number: a min-heap on use, the least busy at
 * the root, ties broken as {@link KeySnapshot#BUSIEST_FIRST} breaks them (the smaller key is the
 * busier). Offering costs {@code O(log capacity)}; used by one maintenance thread at a time.
 */
final class Busiest {

  private final KeyEntry[] entries;
  private final double[] uses;
  private int size;

  Busiest(int capacity) {
    this.entries = new KeyEntry[capacity];
    this.uses = new double[capacity];
  }

  void clear() {
    Arrays.fill(entries, 0, size, null);
    size = 0;
  }

  /** Keeps {@code e} if fewer than the capacity are kept or it is busier than the least busy. */
  void offer(KeyEntry e, double use) {
    if (size < entries.length) {
      int i = size++;
      entries[i] = e;
      uses[i] = use;
      siftUp(i);
    } else if (entries.length > 0 && lessBusy(entries[0], uses[0], e, use)) {
      entries[0] = e;
      uses[0] = use;
      siftDown(0);
    }
  }

  /** The kept entries, in no particular order. */
  KeyEntry[] toArray() {
    return Arrays.copyOf(entries, size);
  }

  /** The kept entries followed by {@code others}. */
  KeyEntry[] with(KeyEntry[] others) {
    KeyEntry[] all = Arrays.copyOf(entries, size + others.length);
    System.arraycopy(others, 0, all, size, others.length);
    return all;
  }

  /** Whether {@code a} (used {@code ua}) ranks below {@code b} (used {@code ub}). */
  private static boolean lessBusy(KeyEntry a, double ua, KeyEntry b, double ub) {
    int c = Double.compare(ua, ub);
    return c != 0 ? c < 0 : a.key.compareTo(b.key) > 0;
  }

  private boolean lessBusy(int i, int j) {
    return lessBusy(entries[i], uses[i], entries[j], uses[j]);
  }

  private void siftUp(int i) {
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      if (!lessBusy(i, parent)) {
        return;
      }
      swap(i, parent);
      i = parent;
    }
  }

  private void siftDown(int i) {
    while (true) {
      int least = i;
      int left = 2 * i + 1;
      int right = left + 1;
      if (left < size && lessBusy(left, least)) {
        least = left;
      }
      if (right < size && lessBusy(right, least)) {
        least = right;
      }
      if (least == i) {
        return;
      }
      swap(i, least);
      i = least;
    }
  }

  private void swap(int i, int j) {
    KeyEntry e = entries[i];
    entries[i] = entries[j];
    entries[j] = e;
    double u = uses[i];
    uses[i] = uses[j];
    uses[j] = u;
  }
}
