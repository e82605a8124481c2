package io.github.llmratelimiter.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The default store: per budget a table of keys, each key guarded by its own lock.
 *
 * <p>Calls on different keys never share a lock. A call across several levels locks its entries in
 * the tables' global order (their registration order in this store), so two calls can never wait on
 * each other in a cycle.
 */
final class InMemoryStore implements RateLimitStore {

  static final long DEFAULT_MAX_KEYS = 1_000_000L;

  private final Ticker ticker;
  private final long maxKeys;
  private final ConcurrentHashMap<String, BudgetTable> tables = new ConcurrentHashMap<>();
  private final AtomicInteger nextOrder = new AtomicInteger();

  InMemoryStore(Ticker ticker, long maxKeys) {
    this.ticker = Args.notNull("ticker", ticker);
    this.maxKeys = Args.positive("maxKeysPerBudget", maxKeys);
  }

  BudgetTable table(Budget budget) {
    Args.notNull("budget", budget);
    BudgetTable t = tables.get(budget.name());
    if (t == null) {
      t = tables.computeIfAbsent(
          budget.name(), n -> new BudgetTable(budget, nextOrder.getAndIncrement(), maxKeys, ticker.read()));
    }
    if (t.budget != budget && !t.budget.equals(budget)) {
      throw new IllegalArgumentException(
          "budget '" + budget.name() + "' is already used with other limits: " + t.budget
              + ", but was " + budget);
    }
    return t;
  }

  @Override
  public Decision acquire(Budget budget, String key, double cost, Composition composition) {
    Args.notBlank("key", key);
    Args.positiveFinite("cost", cost);
    Args.notNull("composition", composition);
    BudgetTable t = table(budget);
    if (!budget.fits(cost)) {
      return t.neverFits();
    }
    while (true) {
      KeyEntry e = t.entry(key, ticker.read());
      if (e == null) {
        return t.tableFull();
      }
      e.lock();
      try {
        if (!e.retired) {
          return decide(t, e, ticker.read(), cost, composition);
        }
      } finally {
        e.unlock();
      }
    }
  }

  /** One level: the window, then the bucket (the seed's order), under the entry's lock. */
  private static Decision decide(
      BudgetTable t, KeyEntry e, long now, double cost, Composition composition) {
    t.normalize(e, now);
    if (t.windowFull(e)) {
      return t.rpmDeny(e, now);
    }
    if (t.bucketShort(e, cost)) {
      if (composition == Composition.SEQUENTIAL) {
        t.chargeWindow(e, now); // the RPM allow already happened: its timestamp stays counted
      }
      return t.burstDeny(e, now, cost);
    }
    t.chargeWindow(e, now);
    t.chargeBucket(e, cost);
    return Decision.allow(t.remaining(e), t.resetMs(e, now), t.name);
  }

  @Override
  public Decision acquire(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    Args.notNull("levels", levels);
    Args.notNull("keys", keys);
    if (levels.isEmpty()) {
      throw new IllegalArgumentException("levels must not be empty, but was " + levels);
    }
    if (levels.size() != keys.size()) {
      throw new IllegalArgumentException(
          "keys must have one key per level (" + levels.size() + "), but had " + keys.size());
    }
    if (levels.size() == 1) {
      return acquire(levels.get(0), keys.get(0), cost, composition);
    }
    Args.positiveFinite("cost", cost);
    Args.notNull("composition", composition);
    int n = levels.size();
    BudgetTable[] tables = new BudgetTable[n];
    Set<String> names = new HashSet<>();
    for (int i = 0; i < n; i++) {
      Args.notBlank("keys[" + i + "]", keys.get(i));
      tables[i] = table(levels.get(i));
      if (!names.add(tables[i].name)) {
        throw new IllegalArgumentException("levels must have distinct names, but '"
            + tables[i].name + "' appears twice");
      }
    }
    for (BudgetTable t : tables) {
      if (!t.budget.fits(cost)) {
        return t.neverFits();
      }
    }
    Integer[] lockOrder = new Integer[n];
    for (int i = 0; i < n; i++) {
      lockOrder[i] = i;
    }
    Arrays.sort(lockOrder, Comparator.comparingInt(i -> tables[i].order));
    KeyEntry[] entries = new KeyEntry[n];
    while (true) {
      long before = ticker.read();
      for (int i = 0; i < n; i++) {
        entries[i] = tables[i].entry(keys.get(i), before);
        if (entries[i] == null) {
          return tables[i].tableFull(); // nothing is locked or charged yet
        }
      }
      int locked = 0;
      try {
        boolean stale = false;
        for (; locked < n; locked++) {
          KeyEntry e = entries[lockOrder[locked]];
          e.lock();
          stale |= e.retired;
        }
        if (!stale) {
          return decide(tables, entries, ticker.read(), cost, composition);
        }
      } finally {
        for (int i = locked - 1; i >= 0; i--) {
          entries[lockOrder[i]].unlock();
        }
      }
    }
  }

  /** Several levels, root first, with every entry locked. */
  private static Decision decide(
      BudgetTable[] tables, KeyEntry[] entries, long now, double cost, Composition composition) {
    int n = tables.length;
    if (composition == Composition.SEQUENTIAL) {
      for (int i = 0; i < n; i++) {
        Decision d = decide(tables[i], entries[i], now, cost, composition);
        if (d.denied()) {
          return d; // levels before i stay charged, as the seed's order implies
        }
      }
    } else {
      for (int i = 0; i < n; i++) {
        tables[i].normalize(entries[i], now);
      }
      for (int i = 0; i < n; i++) {
        if (tables[i].windowFull(entries[i])) {
          return tables[i].rpmDeny(entries[i], now);
        }
        if (tables[i].bucketShort(entries[i], cost)) {
          return tables[i].burstDeny(entries[i], now, cost);
        }
      }
      for (int i = 0; i < n; i++) {
        tables[i].chargeWindow(entries[i], now);
        tables[i].chargeBucket(entries[i], cost);
      }
    }
    long remaining = Long.MAX_VALUE;
    long reset = 0;
    String binding = tables[0].name;
    for (int i = 0; i < n; i++) {
      long r = tables[i].remaining(entries[i]);
      if (r < remaining) {
        remaining = r;
        binding = tables[i].name;
      }
      reset = Math.max(reset, tables[i].resetMs(entries[i], now));
    }
    return Decision.allow(remaining, reset, binding);
  }

  @Override
  public Optional<KeySnapshot> inspect(Budget budget, String key) {
    Args.notBlank("key", key);
    BudgetTable t = table(budget);
    KeyEntry e = t.existing(key);
    return e == null ? Optional.empty() : Optional.ofNullable(snapshot(t, e));
  }

  private @Nullable KeySnapshot snapshot(BudgetTable t, KeyEntry e) {
    e.lock();
    try {
      if (e.retired) {
        return null;
      }
      long now = ticker.read();
      t.normalize(e, now);
      return new KeySnapshot(
          t.name, e.key, t.hasWindow ? e.size : 0, t.limit, t.hasBucket ? e.tokens : 0,
          t.capacity, t.waitMs(e, now, 1.0));
    } finally {
      e.unlock();
    }
  }

  @Override
  public List<KeySnapshot> top(Budget budget, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
    }
    BudgetTable t = table(budget);
    List<KeySnapshot> all = new ArrayList<>();
    for (KeyEntry e : t.entries()) {
      KeySnapshot s = snapshot(t, e);
      if (s != null) {
        all.add(s);
      }
    }
    all.sort(Comparator.comparingDouble(InMemoryStore::use).reversed()
        .thenComparing(KeySnapshot::key));
    return List.copyOf(all.subList(0, Math.min(limit, all.size())));
  }

  /** The larger share of either component in use, from 0 to 1. */
  private static double use(KeySnapshot s) {
    double bucketUse = s.capacity() == 0 ? 0 : 1 - s.tokens() / s.capacity();
    return Math.max(s.windowUtilization(), bucketUse);
  }

  @Override
  public boolean reset(Budget budget, String key) {
    Args.notBlank("key", key);
    return table(budget).reset(key);
  }

  @Override
  public long trackedKeys(Budget budget) {
    return table(budget).size();
  }
}
