package io.github.llmratelimiter.core.internal;

import org.jspecify.annotations.Nullable;

/**
 * A few values found by their key's identity, without hashing or comparing the key: for lookups
 * whose callers hand the same instance on every call (a policy's resolved budgets), in front of a
 * lookup by value ({@link #find}, and on a miss {@link #put}). Lock-free: the entries are one
 * immutable array replaced whole on a miss, so threads that race on a miss at worst resolve a
 * value twice.
 *
 * @param <K> the keys, compared by identity
 * @param <V> the values
 */
public final class IdentityCache<K, V> {

  private record Entry<K, V>(K key, V value) {}

  private final int size;
  private volatile Entry<K, V>[] entries;

  /**
   * Creates an empty cache.
   *
   * @param size the most entries kept (the most recent ones), at least 1
   * @throws IllegalArgumentException if {@code size} is less than 1
   */
  @SuppressWarnings("unchecked")
  public IdentityCache(int size) {
    if (size < 1) {
      throw new IllegalArgumentException("size must be >= 1, but was " + size);
    }
    this.size = size;
    this.entries = new Entry[0];
  }

  /**
   * Returns the value kept for this very instance of {@code key}, or null.
   *
   * @param key the key
   * @return its value, or null when none is kept
   */
  public @Nullable V find(K key) {
    for (Entry<K, V> e : entries) {
      if (e.key == key) {
        return e.value;
      }
    }
    return null;
  }

  /**
   * Keeps {@code value} for this very instance of {@code key} (the oldest entry leaves when the
   * cache is full).
   *
   * @param key the key
   * @param value its value
   */
  @SuppressWarnings("unchecked")
  public void put(K key, V value) {
    Entry<K, V>[] seen = entries;
    for (Entry<K, V> e : seen) {
      if (e.key == key) {
        return; // a racing thread kept it
      }
    }
    int keep = Math.min(seen.length, size - 1);
    Entry<K, V>[] next = new Entry[keep + 1];
    next[0] = new Entry<>(key, value);
    System.arraycopy(seen, 0, next, 1, keep);
    entries = next;
  }
}
