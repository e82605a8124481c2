package io.github.llmratelimiter.core;

import java.util.Arrays;
import java.util.Iterator;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * The in-memory state of one budget's name: a {@link KeyEntry} per key, shared by the budget and
 * its variants ({@link BudgetTable}s over this table), and the maintenance of those entries.
 *
 * <p>Maintenance ({@link #maintain}) walks the table in passes, a bounded number of entries per
 * step: it drops the entries whose state equals a fresh one under the limits of their last call
 * and ranks the busiest it saw for {@link #topCandidates}. Decisions never wait for it and never
 * do any of it.
 */
final class KeyTable {

  /** Entries examined by the step a new key runs when the table is full, on the caller's thread. */
  static final int FULL_TABLE_STEP = 1_000;
  /** The busiest keys a maintenance pass keeps as candidates of {@link #topCandidates}. */
  static final int TOP_CANDIDATES = 1_024;
  /** Up to this many tracked keys, {@link #topCandidates} is every key. */
  static final int TOP_EXACT_KEYS = 2 * TOP_CANDIDATES;

  private static final KeyEntry[] NONE = new KeyEntry[0];

  final String name;
  /** Global lock order of this table within its store; multi-level calls lock by ascending order. */
  final int order;

  private final long maxKeys;
  private final ConcurrentHashMap<String, KeyEntry> entries = new ConcurrentHashMap<>();

  /** Held by the one thread running a maintenance step; guards the four fields below it. */
  private final AtomicBoolean maintaining = new AtomicBoolean();
  /** Where the pass under way stopped; null between passes. */
  private volatile @Nullable Iterator<KeyEntry> pass;
  /** The busiest entries the pass under way has seen so far. */
  private final Busiest busiest = new Busiest(TOP_CANDIDATES);
  /** The busiest entries of the last complete pass. */
  private KeyEntry[] lastPass = NONE;
  /** What {@link #topCandidates} returns above {@link #TOP_EXACT_KEYS} keys, set after each step. */
  private volatile KeyEntry[] candidates = NONE;

  KeyTable(String name, int order, long maxKeys) {
    this.name = name;
    this.order = order;
    this.maxKeys = maxKeys;
  }

  /**
   * Returns the key's entry, creating it for a call with {@code limits}; {@code null} when the key
   * is new and the table is full even after a maintenance step of at most {@link
   * #FULL_TABLE_STEP} entries.
   */
  @Nullable KeyEntry entry(String key, long now, BudgetTable limits) {
    KeyEntry e = entries.get(key);
    if (e != null) {
      return e;
    }
    if (entries.size() >= maxKeys) {
      maintain(now, FULL_TABLE_STEP);
      if (entries.size() >= maxKeys) {
        return null;
      }
    }
    return entries.computeIfAbsent(key, k -> new KeyEntry(k, now, limits));
  }

  @Nullable KeyEntry existing(String key) {
    return entries.get(key);
  }

  /** The entries by key, for a {@link BudgetTable} to look a key up without this table between. */
  ConcurrentHashMap<String, KeyEntry> entries() {
    return entries;
  }

  int size() {
    return entries.size();
  }

  /** Removes the key's entry, restoring its full budget; returns whether it was tracked. */
  boolean reset(String key) {
    KeyEntry e = entries.get(key);
    if (e == null) {
      return false;
    }
    e.lock();
    try {
      if (e.retired) {
        return false;
      }
      retire(e);
      return true;
    } finally {
      e.unlock();
    }
  }

  /** Removes every key's entry, as {@link #reset} does for one. */
  void resetAll() {
    for (String key : entries.keySet()) {
      reset(key);
    }
  }

  private void retire(KeyEntry e) {
    e.retired = true;
    entries.remove(e.key, e);
  }

  /**
   * One maintenance step: examines at most {@code maxEntries} entries, continuing the pass under
   * way or starting a new one, and returns how many it examined.
   *
   * <p>Each examined entry that is not in use and equals a fresh one at {@code now}, under the
   * limits of its last call, is retired and dropped (which grants nothing that call's limits would
   * not); every other is ranked by its use. An entry in use is skipped, not waited for, and ranked
   * on the state it had when last released. A pass sees every entry tracked when it started and
   * still tracked when it gets there. Only one step runs at a time: a step that finds another
   * under way examines nothing and returns 0.
   */
  int maintain(long now, int maxEntries) {
    if (!maintaining.compareAndSet(false, true)) {
      return 0;
    }
    try {
      Iterator<KeyEntry> it = pass;
      if (it == null) {
        it = entries.values().iterator();
        busiest.clear();
      }
      int examined = 0;
      while (examined < maxEntries && it.hasNext()) {
        examine(it.next(), now);
        examined++;
      }
      if (it.hasNext()) {
        pass = it;
        candidates = busiest.with(lastPass);
      } else {
        pass = null;
        lastPass = busiest.toArray();
        candidates = lastPass;
      }
      return examined;
    } finally {
      maintaining.set(false);
    }
  }

  /** Whether a pass is under way (read outside a step, it may be out of date at once). */
  boolean midPass() {
    return pass != null;
  }

  private void examine(KeyEntry e, long now) {
    if (!e.tryLock()) {
      busiest.offer(e, e.limits.use(e, now, false)); // in use now: a racy read ranks it well enough
      return;
    }
    try {
      if (e.retired) {
        return;
      }
      BudgetTable limits = e.limits;
      if (limits.isFreshAt(e, now)) {
        retire(e);
      } else {
        busiest.offer(e, limits.use(e, now, true));
      }
    } finally {
      e.unlock();
    }
  }

  /**
   * The entries {@link StoreAdministration#top} ranks: every tracked one (at most {@link
   * #TOP_EXACT_KEYS}) while the table holds at most that many; above, the {@link #TOP_CANDIDATES}
   * busiest of the last complete maintenance pass and those of the pass under way. May hold an
   * entry twice, or one retired since.
   */
  KeyEntry[] topCandidates() {
    if (entries.size() > TOP_EXACT_KEYS) {
      return candidates;
    }
    KeyEntry[] all = new KeyEntry[TOP_EXACT_KEYS];
    int n = 0;
    for (Iterator<KeyEntry> it = entries.values().iterator(); n < all.length && it.hasNext(); ) {
      all[n++] = it.next();
    }
    return Arrays.copyOf(all, n);
  }
}
