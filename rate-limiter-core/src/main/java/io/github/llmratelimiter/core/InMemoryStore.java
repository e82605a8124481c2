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
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
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
  private final AtomicLong reservationIds = new AtomicLong();

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
          return decide(t, e, ticker.read(), cost, 0, 0, composition);
        }
      } finally {
        e.unlock();
      }
    }
  }

  /**
   * One level, under the entry's lock, in the seed's order: the request window, then the bucket,
   * then the model-token window. In sequential composition what ran before a deny stays charged.
   */
  private static Decision decide(BudgetTable t, KeyEntry e, long now, double cost, long estimate,
      long id, Composition composition) {
    t.normalize(e, now);
    if (t.windowFull(e)) {
      return t.rpmDeny(e, now);
    }
    boolean sequential = composition == Composition.SEQUENTIAL;
    if (t.bucketShort(e, cost)) {
      if (sequential) {
        t.chargeWindow(e, now); // the RPM allow already happened: its timestamp stays counted
      }
      return t.burstDeny(e, now, cost);
    }
    if (t.modelTokensShort(e, estimate)) {
      if (sequential) {
        t.chargeWindow(e, now);
        t.chargeBucket(e, cost);
      }
      return t.modelTokensDeny(e, now, estimate);
    }
    t.chargeWindow(e, now);
    t.chargeBucket(e, cost);
    t.chargeModelTokens(e, now, estimate, id);
    return Decision.allow(t.remaining(e), t.resetMs(e, now), t.name);
  }

  @Override
  public Decision acquire(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    checkLists(levels, keys);
    if (levels.size() == 1) {
      return acquire(levels.get(0), keys.get(0), cost, composition);
    }
    return decideAll(levels, keys, cost, 0, composition, false).decision();
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      long estimatedModelTokens, Composition composition) {
    checkLists(levels, keys);
    Args.notNegative("estimatedModelTokens", estimatedModelTokens);
    return decideAll(levels, keys, cost, estimatedModelTokens, composition, true);
  }

  private static void checkLists(List<Budget> levels, List<String> keys) {
    Args.notNull("levels", levels);
    Args.notNull("keys", keys);
    if (levels.isEmpty()) {
      throw new IllegalArgumentException("levels must not be empty, but was " + levels);
    }
    if (levels.size() != keys.size()) {
      throw new IllegalArgumentException(
          "keys must have one key per level (" + levels.size() + "), but had " + keys.size());
    }
  }

  private Reservation decideAll(List<Budget> levels, List<String> keys, double cost,
      long estimate, Composition composition, boolean reserve) {
    Args.positiveFinite("cost", cost);
    Args.notNull("composition", composition);
    BudgetTable[] tables = tables(levels, keys);
    for (BudgetTable t : tables) {
      if (!t.fits(cost, estimate)) {
        return new Reservation(t.neverFits(), levels, keys, estimate, 0, 0, 0);
      }
    }
    return withLocked(tables, keys, true, (entries, now) -> {
      boolean limitsModelTokens = false;
      for (BudgetTable t : tables) {
        limitsModelTokens |= t.hasModelTokens;
      }
      long id = reserve && limitsModelTokens ? reservationIds.incrementAndGet() : 0;
      Decision d = decide(tables, entries, now, cost, estimate, id, composition);
      long remainingTokens = Long.MAX_VALUE;
      long tokensReset = 0;
      for (int i = 0; i < tables.length; i++) {
        if (tables[i].hasModelTokens) {
          tables[i].normalize(entries[i], now); // a level a sequential deny never reached, too
          remainingTokens = Math.min(remainingTokens, tables[i].remainingModelTokens(entries[i]));
          tokensReset = Math.max(tokensReset, tables[i].modelTokensResetMs(entries[i], now));
        }
      }
      return new Reservation(d, levels, keys, estimate, d.allowed() ? id : 0, remainingTokens,
          tokensReset);
    }, i -> new Reservation(tables[i].tableFull(), levels, keys, estimate, 0, 0, 0));
  }

  private BudgetTable[] tables(List<Budget> levels, List<String> keys) {
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
    return tables;
  }

  /** What runs with every level's entry locked; {@code entries} is never null there. */
  @FunctionalInterface
  private interface LockedAction<T> {
    T run(KeyEntry[] entries, long now);
  }

  /**
   * Locks the keys' entries in the tables' global order and runs {@code action} at a reading of
   * the ticker taken under the locks. An entry retired meanwhile is looked up again. When a table
   * is full and a key is new to it, nothing is locked and {@code full} answers for that level
   * (unless {@code create} is false: then the missing entry is skipped as {@code null}).
   */
  private <T> T withLocked(BudgetTable[] tables, List<String> keys, boolean create,
      LockedAction<T> action, IntFunction<T> full) {
    int n = tables.length;
    Integer[] lockOrder = new Integer[n];
    for (int i = 0; i < n; i++) {
      lockOrder[i] = i;
    }
    Arrays.sort(lockOrder, Comparator.comparingInt(i -> tables[i].order));
    KeyEntry[] entries = new KeyEntry[n];
    while (true) {
      long before = ticker.read();
      for (int i = 0; i < n; i++) {
        entries[i] = create ? tables[i].entry(keys.get(i), before) : tables[i].existing(keys.get(i));
        if (entries[i] == null && create) {
          return full.apply(i); // nothing is locked or charged yet
        }
      }
      int locked = 0;
      try {
        boolean stale = false;
        for (; locked < n; locked++) {
          KeyEntry e = entries[lockOrder[locked]];
          if (e != null) {
            e.lock();
            stale |= e.retired;
          }
        }
        if (!stale) {
          return action.run(entries, ticker.read());
        }
      } finally {
        for (int i = locked - 1; i >= 0; i--) {
          KeyEntry e = entries[lockOrder[i]];
          if (e != null) {
            e.unlock();
          }
        }
      }
    }
  }

  /** Several levels, root first, with every entry locked. */
  private static Decision decide(BudgetTable[] tables, KeyEntry[] entries, long now, double cost,
      long estimate, long id, Composition composition) {
    int n = tables.length;
    if (composition == Composition.SEQUENTIAL) {
      for (int i = 0; i < n; i++) {
        Decision d = decide(tables[i], entries[i], now, cost, estimate, id, composition);
        if (d.denied()) {
          return d; // levels before i stay charged, as the seed's order implies
        }
      }
    } else {
      for (int i = 0; i < n; i++) {
        tables[i].normalize(entries[i], now);
      }
      for (int i = 0; i < n; i++) {
        BudgetTable t = tables[i];
        KeyEntry e = entries[i];
        if (t.windowFull(e)) {
          return t.rpmDeny(e, now);
        }
        if (t.bucketShort(e, cost)) {
          return t.burstDeny(e, now, cost);
        }
        if (t.modelTokensShort(e, estimate)) {
          return t.modelTokensDeny(e, now, estimate);
        }
      }
      for (int i = 0; i < n; i++) {
        tables[i].chargeWindow(entries[i], now);
        tables[i].chargeBucket(entries[i], cost);
        tables[i].chargeModelTokens(entries[i], now, estimate, id);
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
  public void reconcile(Reservation reservation, long actualModelTokens) {
    Args.notNull("reservation", reservation);
    Args.notNegative("actualModelTokens", actualModelTokens);
    if (!reservation.reserved()) {
      return;
    }
    BudgetTable[] tables = tables(reservation.levels(), reservation.keys());
    boolean underEstimate = actualModelTokens > reservation.estimate();
    withLocked(tables, reservation.keys(), underEstimate, (entries, now) -> {
      for (int i = 0; i < tables.length; i++) {
        if (entries[i] != null) {
          tables[i].reconcileModelTokens(entries[i], now, reservation.id(),
              reservation.estimate(), actualModelTokens);
        }
      }
      return null;
    }, i -> null); // a full table cannot take the extra charge of a key it no longer tracks
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
          t.capacity, t.waitMs(e, now, 1.0), Math.max(0, e.tpmSum), t.modelTokenLimit);
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
