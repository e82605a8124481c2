package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The default store: per budget name a table of keys, each key guarded by its own lock, shared by
 * the budget's defaults and its variants.
 *
 * <p>Calls on different keys never share a lock. A call across several levels locks its entries in
 * the tables' global order (their registration order in this store), so two calls can never wait on
 * each other in a cycle. A call to an {@link Upstream} locks the upstream's entry (its budget's one
 * key) in the same order, and then the monitor of what its provider's reports left ({@link
 * UpstreamState}), which {@link #report} and the upstream's order ({@link InMemoryUpstreamOrder})
 * take alone: a call with a turn checks the order, leaves it and is counted under that monitor, in
 * the same step as its decision.
 *
 * <p>Calls do no housekeeping. A {@link MaintenanceScheduler} runs {@link #cleanUp()}, which
 * examines at most {@code maintenanceStep} entries per run across the budgets: it drops idle keys
 * and ranks the busiest for {@link StoreAdministration#top}.
 */
final class InMemoryStore implements RateLimitStore {

  static final long DEFAULT_MAX_KEYS = 1_000_000L;
  /** The pause between two maintenance steps of the default scheduler. */
  static final Duration DEFAULT_MAINTENANCE_INTERVAL = Duration.ofSeconds(1);
  /** Entries one maintenance step examines at most, across the store's budgets. */
  static final int DEFAULT_MAINTENANCE_STEP = 100_000;

  private final Ticker ticker;
  /** The calendar's clock: quotas count over its periods. */
  private final InstantSource wallClock;
  private final QuotaBook quotaBook;
  /** When the quota counters were last expired, epoch milliseconds. */
  private volatile long quotasExpiredAt;
  private final long maxKeys;
  private final int maintenanceStep;
  private final ConcurrentHashMap<String, BudgetTable> tables = new ConcurrentHashMap<>();
  private final AtomicInteger nextOrder = new AtomicInteger();
  private final AtomicLong reservationIds = new AtomicLong();
  private final InMemoryPlans plans = new InMemoryPlans();
  /** The most upstreams whose budgets {@link #upstreamBudget} remembers. */
  private static final int MAX_UPSTREAM_BUDGETS = 1024;
  /** Per upstream, its budget as its table holds it. */
  private final ConcurrentHashMap<Upstream, Budget> upstreamBudgets = new ConcurrentHashMap<>();
  /** Per upstream name, what its provider's reports left. */
  private final ConcurrentHashMap<String, UpstreamState> upstreams = new ConcurrentHashMap<>();
  /** The fair order of the upstreams' waiting calls. */
  private final InMemoryUpstreamOrder order;
  private final InMemoryAdministration administration;
  private final QuotaFile quotaFile;
  /** The table (its position in the tables' order) that the next maintenance step continues. */
  private volatile int maintainedTable;
  private volatile @Nullable Future<?> maintenance;

  /** A store that nothing maintains until {@link #startMaintenance} is called. */
  InMemoryStore(Ticker ticker, long maxKeys, int maintenanceStep) {
    this(ticker, InstantSource.system(), maxKeys, maintenanceStep);
  }

  /** A store whose quotas follow {@code wallClock}; nothing maintains it until started. */
  InMemoryStore(Ticker ticker, InstantSource wallClock, long maxKeys, int maintenanceStep) {
    this.ticker = Args.notNull("ticker", ticker);
    this.wallClock = Args.notNull("wallClock", wallClock);
    this.quotaBook = new QuotaBook(Math.multiplyHigh(maxKeys, 4) != 0 ? Long.MAX_VALUE
        : maxKeys * 4);
    this.maxKeys = Args.positive("maxKeysPerBudget", maxKeys);
    this.maintenanceStep = (int) Args.positive("maintenanceStep", maintenanceStep);
    this.administration = new InMemoryAdministration(this, plans, ticker);
    this.quotaFile = new QuotaFile(quotaBook, wallClock);
    this.order = new InMemoryUpstreamOrder(this, ticker);
  }

  /** A store that {@code scheduler} maintains, {@value #DEFAULT_MAINTENANCE_STEP} entries a step. */
  static InMemoryStore maintained(Ticker ticker, long maxKeys, MaintenanceScheduler scheduler) {
    return maintained(ticker, InstantSource.system(), maxKeys, scheduler);
  }

  /** A maintained store whose quotas follow {@code wallClock}. */
  static InMemoryStore maintained(Ticker ticker, InstantSource wallClock, long maxKeys,
      MaintenanceScheduler scheduler) {
    Args.notNull("scheduler", scheduler);
    InMemoryStore store = new InMemoryStore(ticker, wallClock, maxKeys, DEFAULT_MAINTENANCE_STEP);
    store.startMaintenance(scheduler);
    return store;
  }

  /** Hands {@link #cleanUp()} to {@code scheduler}; {@link #close()} cancels it. */
  void startMaintenance(MaintenanceScheduler scheduler) {
    MaintenanceTask task = new MaintenanceTask(this);
    Future<?> future = Args.notNull("the scheduler's future", scheduler.schedule(task));
    task.scheduled(future);
    maintenance = future;
  }

  /**
   * One maintenance step: examines at most {@code maintenanceStep} entries and returns how many.
   *
   * <p>The steps walk the tables in their order as one sequence: a step continues the table where
   * the last one stopped, and when that table's pass ends, goes on with the next table's pass, until
   * it has examined {@code maintenanceStep} entries or visited every table once. So with {@code T}
   * entries tracked, a pass over any table starts and ends within {@code 2T} examined entries:
   * {@code ceil(2T / maintenanceStep) + 2} steps.
   */
  int cleanUp() {
    expireQuotas();
    BudgetTable[] all = tables.values().toArray(new BudgetTable[0]);
    if (all.length == 0) {
      return 0;
    }
    Arrays.sort(all, Comparator.comparingInt(t -> t.order));
    long now = ticker.read();
    int first = Math.floorMod(maintainedTable, all.length);
    int examined = 0;
    for (int i = 0; i < all.length; i++) {
      int t = (first + i) % all.length;
      examined += all[t].keys.maintain(now, maintenanceStep - examined);
      if (examined == maintenanceStep) {
        maintainedTable = all[t].keys.midPass() ? t : (t + 1) % all.length;
        return examined;
      }
    }
    return examined; // every table's pass ended (or another step held one)
  }

  /** Drops the quota counters of periods long over, at most once a minute. */
  private void expireQuotas() {
    long nowMs = wallClock.millis();
    if (nowMs - quotasExpiredAt >= 60_000L || nowMs < quotasExpiredAt) {
      quotasExpiredAt = nowMs;
      quotaBook.expire(nowMs);
    }
  }

  /** The quota counters. */
  QuotaBook quotaBook() {
    return quotaBook;
  }

  /** The calendar's clock. */
  InstantSource wallClock() {
    return wallClock;
  }

  /** Stops the scheduled maintenance; calls keep working, and a full table still makes room. */
  @Override
  public void close() {
    Future<?> f = maintenance;
    if (f != null) {
      f.cancel(false);
    }
  }

  /**
   * The table of {@code budget}: its defaults' table, or a variant's over the same keys.
   *
   * @throws IllegalArgumentException if the name is already used with other defaults
   */
  BudgetTable table(Budget budget) {
    Args.notNull("budget", budget);
    BudgetTable t = tables.get(budget.name());
    if (t == null) {
      Budget defaults = budget.defaults();
      t = tables.computeIfAbsent(
          budget.name(), n -> new BudgetTable(defaults, nextOrder.getAndIncrement(), maxKeys));
    }
    return t.budget == budget ? t : t.view(budget);
  }

  /** Every budget name's table, in no particular order. */
  Collection<BudgetTable> allTables() {
    return tables.values();
  }

  /** The error of a plain acquire on a level that limits concurrency. */
  private static IllegalArgumentException needsReserve(BudgetTable t) {
    if (t.hasQuotas) {
      return new IllegalArgumentException("budget '" + t.name + "' has quotas ("
          + t.budget.quotas() + "): call reserve, whose Reservation settles them");
    }
    return new IllegalArgumentException("budget '" + t.name + "' limits concurrency ("
        + t.budget.concurrency() + "): call reserve, whose Reservation releases the slot");
  }

  @Override
  public Decision acquire(Budget budget, String key, double cost, Composition composition) {
    return acquire(table(budget), key, cost, composition);
  }

  /** One level, on a table resolved once by the caller (the hot path of {@link GatewayLimiter}). */
  Decision acquire(BudgetTable t, String key, double cost, Composition composition) {
    checkCall(key, cost, composition);
    if (t.hasConcurrency || t.hasQuotas) {
      throw needsReserve(t);
    }
    if (!(cost <= t.maxCost)) {
      Args.notBlank("key", key);
      return t.neverFits();
    }
    KeyEntry e = lockTracked(t, key);
    if (e == null && (e = lockNew(t, key)) == null) {
      return t.tableFull();
    }
    try {
      long now = ticker.read();
      Decision d =
          t.decision(e, now, cost, 0, apply(t, e, now, cost, 0, 0, composition), composition);
      t.forgetIfFresh(e);
      return d;
    } finally {
      e.unlock();
    }
  }

  /** Like {@link #acquire(BudgetTable, String, double, Composition)}, telling only whether allowed. */
  boolean tryAcquire(BudgetTable t, String key, double cost, Composition composition) {
    checkCall(key, cost, composition);
    if (t.hasConcurrency || t.hasQuotas) {
      throw needsReserve(t);
    }
    if (!(cost <= t.maxCost)) {
      Args.notBlank("key", key);
      return false;
    }
    KeyEntry e = lockTracked(t, key);
    if (e == null && (e = lockNew(t, key)) == null) {
      return false;
    }
    try {
      long now = ticker.read();
      Reason r = apply(t, e, now, cost, 0, 0, composition);
      t.forgetIfFresh(e);
      return r == Reason.OK;
    } finally {
      e.unlock();
    }
  }

  /**
   * Checks a one-level call's arguments in the order the errors are reported. A key's blankness is
   * checked where it is first tracked ({@link #lockNew}): a blank key is never tracked, so a
   * tracked key needs no scan of its characters.
   */
  private static void checkCall(String key, double cost, Composition composition) {
    if (key == null || !(cost > 0 && cost <= Double.MAX_VALUE) || composition == null) {
      Args.notBlank("key", key);
      Args.positiveFinite("cost", cost);
      Args.notNull("composition", composition);
    }
  }

  /** The key's tracked entry, locked; null if the key has no live entry. */
  private static @Nullable KeyEntry lockTracked(BudgetTable t, String key) {
    KeyEntry e = t.existing(key);
    if (e != null) {
      e.lock();
      if (!e.retired) {
        return e;
      }
      e.unlock();
    }
    return null;
  }

  /** The key's entry, created if need be, locked; null when the key is new and the table full. */
  private @Nullable KeyEntry lockNew(BudgetTable t, String key) {
    Args.notBlank("key", key);
    return lockLookedUp(t, key);
  }

  /** Like {@link #lockNew}, for a key already checked. */
  private @Nullable KeyEntry lockLookedUp(BudgetTable t, String key) {
    while (true) {
      KeyEntry e = lookUp(t, key);
      if (e == null) {
        return null;
      }
      e.lock();
      if (!e.retired) {
        return e;
      }
      e.unlock(); // retired by a sweep meanwhile: look up again
    }
  }

  /** The key's entry: a tracked one without reading the ticker, else a new one (null if full). */
  private @Nullable KeyEntry lookUp(BudgetTable t, String key) {
    KeyEntry e = t.existing(key);
    return e != null ? e : t.keys.entry(key, ticker.read(), t);
  }

  /**
   * One level, under the entry's lock: the slots first (a free check: the slot itself is taken
   * only once the whole call is admitted, {@link #takeSlots}), then in sequential order the request
   * window, the bucket and the model-token window. Charges what the composition says and returns
   * {@link Reason#OK} or the denying component's reason; in sequential composition what ran before
   * a deny stays charged.
   */
  private static Reason apply(BudgetTable t, KeyEntry e, long now, double cost, long estimate,
      long id, Composition composition) {
    t.normalize(e, now);
    if (t.slotsFull(e)) {
      return Reason.CONCURRENCY_LIMIT;
    }
    if (t.windowFull(e)) {
      return Reason.RPM_LIMIT;
    }
    boolean sequential = composition == Composition.SEQUENTIAL;
    if (t.bucketShort(e, cost)) {
      if (sequential) {
        t.chargeWindow(e, now); // the RPM allow already happened: its timestamp stays counted
      }
      return Reason.BURST_LIMIT;
    }
    if (t.modelTokensShort(e, estimate)) {
      if (sequential) {
        t.chargeWindow(e, now);
        t.chargeBucket(e, now, cost);
      }
      return Reason.TPM_LIMIT;
    }
    t.chargeWindow(e, now);
    t.chargeBucket(e, now, cost);
    t.chargeModelTokens(e, now, estimate, id);
    return Reason.OK;
  }

  /** Takes a slot at every level that limits concurrency: the whole call was admitted. */
  private static void takeSlots(BudgetTable[] tables, KeyEntry first, long now, long id) {
    KeyEntry e = first;
    for (int i = 0; i < tables.length; i++, e = e.held) {
      tables[i].takeSlot(e, now, id);
    }
  }

  /** Forgets the buckets the call left fresh at levels {@code 0..last}, after its decision. */
  private static void forgetFresh(BudgetTable[] tables, KeyEntry first, int last) {
    KeyEntry e = first;
    for (int i = 0; i <= last; i++, e = e.held) {
      tables[i].forgetIfFresh(e);
    }
  }

  @Override
  public Decision acquire(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    checkLists(levels, keys);
    if (levels.size() == 1) {
      return acquire(levels.get(0), keys.get(0), cost, composition);
    }
    BudgetTable[] tables = tables(levels);
    return acquire(tables, lockOrder(tables), keys, cost, composition);
  }

  /** Several levels on tables and a lock order resolved once by the caller. */
  Decision acquire(BudgetTable[] tables, int[] lockOrder, List<String> keys, double cost,
      Composition composition) {
    return acquire(tables, lockOrder, keys, cost, composition, false);
  }

  /**
   * Like {@link #acquire(BudgetTable[], int[], List, double, Composition)}, telling only whether
   * allowed, so that nothing is allocated.
   */
  boolean tryAcquire(BudgetTable[] tables, int[] lockOrder, List<String> keys, double cost,
      Composition composition) {
    return acquire(tables, lockOrder, keys, cost, composition, true).allowed();
  }

  /** Several levels; with {@code verdict}, the decision is only {@link #VERDICT_ALLOWED} or not. */
  private Decision acquire(BudgetTable[] tables, int[] lockOrder, List<String> keys, double cost,
      Composition composition, boolean verdict) {
    checkKeys(keys);
    Args.positiveFinite("cost", cost);
    Args.notNull("composition", composition);
    for (BudgetTable t : tables) {
      if (t.hasConcurrency || t.hasQuotas) {
        throw needsReserve(t);
      }
    }
    for (BudgetTable t : tables) {
      if (!t.budget.fits(cost)) {
        return verdict ? VERDICT_DENIED : t.neverFits();
      }
    }
    return (Decision) decideAll(tables, lockOrder, keys, cost, 0, null, composition, false,
        verdict, null);
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      long estimatedModelTokens, Composition composition) {
    Args.notNegative("estimatedModelTokens", estimatedModelTokens);
    return reserve(levels, keys, cost, new Consumption(1, estimatedModelTokens, 0), composition);
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition) {
    checkReserve(levels, keys, cost, estimate, composition);
    BudgetTable[] tables = tables(levels);
    boolean quotas = false;
    for (BudgetTable t : tables) {
      if (!t.fits(cost, estimate)) {
        return refused(t.neverFits(), levels, keys, estimate);
      }
      quotas |= t.hasQuotas;
    }
    return (Reservation) decideAll(tables, lockOrder(tables), keys, cost, estimate.modelTokens(),
        quotas ? estimate : null, composition, true, false, null);
  }

  /** Checks the arguments of a reservation with quotas. */
  private static void checkReserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition) {
    checkLists(levels, keys);
    checkKeys(keys);
    Args.positiveFinite("cost", cost);
    checkEstimate(estimate);
    Args.notNull("composition", composition);
  }

  /**
   * The upstream's budget as a last level after the caller's: its table (the configured limits),
   * the state its provider's reports left, the caller's tables and keys with it appended, and the
   * call's turn in the upstream's order (null: the call ignores the order).
   */
  private record UpstreamCall(BudgetTable table, UpstreamState state, BudgetTable[] tables,
      List<String> keys, List<Budget> levels, @Nullable UpstreamTurn turn) {}

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream) {
    return reserve(levels, keys, cost, estimate, composition, upstream, null, false);
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream, UpstreamTurn turn) {
    return reserve(levels, keys, cost, estimate, composition, upstream, turn, true);
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream,
      UpstreamTurn turn) {
    return CompletableFuture.completedFuture(
        reserve(levels, keys, cost, estimate, composition, upstream, turn, true));
  }

  @Override
  public UpstreamOrder upstreamOrder() {
    return order;
  }

  /** A call to an upstream, in its order when {@code ordered} (then {@code turn} is required). */
  private Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream,
      @Nullable UpstreamTurn turn, boolean ordered) {
    checkReserve(levels, keys, cost, estimate, composition);
    Args.notNull("upstream", upstream);
    if (ordered) {
      Args.notNull("turn", turn);
    }
    for (int i = 0; i < levels.size(); i++) {
      if (Upstream.isUpstream(levels.get(i))) {
        throw new IllegalArgumentException("levels must be the caller's budgets, but levels[" + i
            + "] was the upstream's budget '" + levels.get(i).name() + "'");
      }
    }
    BudgetTable[] tables = tables(levels);
    boolean quotas = false;
    for (BudgetTable t : tables) {
      if (!t.fits(cost, estimate)) {
        return refused(t.neverFits(), levels, keys, estimate);
      }
      quotas |= t.hasQuotas;
    }
    Budget budget = upstreamBudget(upstream);
    BudgetTable table = table(budget);
    int n = tables.length;
    BudgetTable[] all = Arrays.copyOf(tables, n + 1);
    all[n] = table;
    List<String> allKeys = new ArrayList<>(keys);
    allKeys.add(upstream.name());
    List<Budget> allLevels = new ArrayList<>(levels);
    allLevels.add(budget);
    if (!table.fits(cost, estimate.modelTokens())) {
      return refused(table.neverFits(), allLevels, allKeys, estimate);
    }
    UpstreamCall up = new UpstreamCall(table, upstreamState(upstream.name(), budget), all, allKeys,
        allLevels, turn);
    return (Reservation) decideAll(tables, lockOrder(all), keys, cost, estimate.modelTokens(),
        quotas ? estimate : null, composition, true, false, up);
  }

  /**
   * The upstream's budget: the one its table holds when equal, remembered per upstream (at most
   * {@link #MAX_UPSTREAM_BUDGETS} of them), so that a call finds its table's own budget and no view
   * is built for it.
   */
  private Budget upstreamBudget(Upstream upstream) {
    Budget b = upstreamBudgets.get(upstream);
    if (b != null) {
      return b;
    }
    Budget fresh = upstream.budget();
    BudgetTable t = table(fresh); // checks the name's defaults
    Budget canonical = t.budget.equals(fresh) ? t.budget : fresh;
    if (upstreamBudgets.size() < MAX_UPSTREAM_BUDGETS) {
      upstreamBudgets.putIfAbsent(upstream, canonical);
    }
    return canonical;
  }

  /** The report state of the upstream named {@code name}, whose budget is {@code budget}. */
  private UpstreamState upstreamState(String name, Budget budget) {
    UpstreamState s = upstreams.get(name);
    return s != null ? s : upstreams.computeIfAbsent(name, n -> new UpstreamState(budget));
  }

  /** The report state and order of {@code upstream}, created if need be. */
  UpstreamState upstreamState(Upstream upstream) {
    Budget budget = table(upstreamBudget(upstream)).budget; // the name's limits: the same defaults
    return upstreamState(upstream.name(), budget);
  }

  @Override
  public void report(Upstream upstream, ProviderReport report) {
    Args.notNull("upstream", upstream);
    Args.notNull("report", report);
    UpstreamState s = upstreamState(upstream);
    synchronized (s) {
      s.apply(report, ticker.read());
    }
  }

  @Override
  public UpstreamStatus upstreamStatus(Upstream upstream) {
    Args.notNull("upstream", upstream);
    BudgetTable table = table(upstreamBudget(upstream));
    UpstreamState s = upstreamState(upstream.name(), table.budget);
    // the entry, created if need be, so that a decision that creates it comes wholly before or
    // after this read (null only if a plain call filled the table with keys of its own)
    KeyEntry e = lockLookedUp(table, upstream.name());
    try {
      synchronized (s) {
        long now = ticker.read();
        BudgetTable t = table.view(s.budget());
        Long requests = null;
        Long requestsLeft = null;
        if (t.hasWindow) {
          requests = (long) t.limit;
          requestsLeft = e == null ? requests : Math.max(0, t.limit - e.sizeAt(now, t.windowNanos));
        }
        Long tokens = null;
        Long tokensLeft = null;
        if (t.hasModelTokens) {
          tokens = t.modelTokenLimit;
          if (e != null) {
            t.expireModelTokens(e, now);
          }
          tokensLeft = e == null ? tokens : t.remainingModelTokens(e);
        }
        long inFlight = t.hasConcurrency && e != null ? e.leases.liveAt(now) : 0;
        return new UpstreamStatus(upstream.name(), requests, requestsLeft, tokens, tokensLeft,
            inFlight, s.requestsLeft(now), s.tokensLeft(now), s.closedForMs(now));
      }
    } finally {
      if (e != null) {
        e.unlock();
      }
    }
  }

  /** Checks a reservation's estimate: one request. */
  static void checkEstimate(Consumption estimate) {
    Args.notNull("estimate", estimate);
    if (estimate.requests() != 1) {
      throw new IllegalArgumentException(
          "estimate must count 1 request, but was " + estimate.requests());
    }
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

  private static void checkKeys(List<String> keys) {
    for (int i = 0; i < keys.size(); i++) {
      String key = keys.get(i);
      // a key that starts with a character other than whitespace is not blank: no scan of the rest
      if (key == null || key.isEmpty()
          || Character.isWhitespace(key.charAt(0)) && key.isBlank()) {
        Args.notBlank("keys[" + i + "]", key); // builds the message only when it throws
      }
    }
  }

  /** The levels' tables, one per distinct name. */
  BudgetTable[] tables(List<Budget> levels) {
    int n = levels.size();
    BudgetTable[] tables = new BudgetTable[n];
    for (int i = 0; i < n; i++) {
      BudgetTable t = table(levels.get(i));
      for (int j = 0; j < i; j++) {
        if (tables[j].keys == t.keys) { // one key table per name
          throw new IllegalArgumentException(
              "levels must have distinct names, but '" + t.name + "' appears twice");
        }
      }
      tables[i] = t;
    }
    return tables;
  }

  /** The indexes of {@code tables} in the store's global lock order (an insertion sort: few levels). */
  static int[] lockOrder(BudgetTable[] tables) {
    int[] order = new int[tables.length];
    for (int i = 0; i < tables.length; i++) {
      int j = i;
      while (j > 0 && tables[order[j - 1]].order > tables[i].order) {
        order[j] = order[j - 1];
        j--;
      }
      order[j] = i;
    }
    return order;
  }

  /**
   * The reservation of a call refused before any state is read: nothing reserved; its estimated
   * model tokens, and its estimated cost when a level has quotas (what they would have been
   * charged).
   */
  private Reservation refused(Decision decision, List<Budget> levels, List<String> keys,
      Consumption estimate) {
    long spend = 0;
    long quotaAtMs = 0;
    for (Budget b : levels) {
      if (!b.quotas().isEmpty()) {
        spend = estimate.spend();
        quotaAtMs = wallClock.millis(); // the quotas' periods the call was refused in
        break;
      }
    }
    return new Reservation(decision, levels, keys, estimate.modelTokens(), 0, 0, 0, spend,
        quotaAtMs, List.of());
  }

  /**
   * A verdict-only caller's allowed decision ({@link #tryAcquire(BudgetTable[], int[], List,
   * double, Composition)}), shared so that the verdict allocates nothing.
   */
  private static final Decision VERDICT_ALLOWED = Decision.allow(0, 0, "verdict");

  /** A verdict-only caller's deny, shared as {@link #VERDICT_ALLOWED} is. */
  private static final Decision VERDICT_DENIED =
      Decision.finalDeny(Reason.COST_EXCEEDS_CAPACITY, 0, 0, "verdict");

  /**
   * Locks every level's entry in the global order and decides; returns a {@link Decision}, or a
   * {@link Reservation} when {@code reserve}; with {@code verdict}, only {@link #VERDICT_ALLOWED}
   * or {@link #VERDICT_DENIED}.
   */
  private Object decideAll(BudgetTable[] tables, int[] lockOrder, List<String> keys, double cost,
      long estimate, @Nullable Consumption quotaEstimate, Composition composition, boolean reserve,
      boolean verdict, @Nullable UpstreamCall up) {
    BudgetTable[] locked = up == null ? tables : up.tables; // with an upstream: its entry last
    List<String> lockedKeys = up == null ? keys : up.keys;
    while (true) {
      KeyEntry first = lockChain(locked, lockOrder, lockedKeys);
      if (first == null) {
        // a new key found its table full (nothing is locked or charged): report the first such
        // level, as looking the keys up in level order finds it (a caller's level before the
        // upstream, whose deny is then the one without it)
        int full = lookUpAll(locked, lockedKeys, new KeyEntry[locked.length], true);
        if (full < 0) {
          continue; // room was made meanwhile
        }
        Decision d = verdict ? VERDICT_DENIED : locked[full].tableFull();
        if (full == tables.length) {
          return new Reservation(d, up.levels, up.keys, estimate, 0, 0, 0);
        }
        return reserve ? new Reservation(d, levels(tables), keys, estimate, 0, 0, 0) : d;
      }
      try {
        long now = ticker.read();
        long id = reserve && numbersReservation(locked) ? reservationIds.incrementAndGet() : 0;
        QuotaCall quotas = quotaEstimate == null ? null
            : new QuotaCall(quotaBook, tables, keys, quotaEstimate, wallClock.millis());
        if (quotas != null && quotas.full >= 0) {
          // a new key's quota counters find the store full: nothing charged
          Decision d = verdict ? VERDICT_DENIED : tables[quotas.full].tableFull();
          return new Reservation(d, levels(tables), keys, estimate, 0, 0, 0);
        }
        if (up != null) {
          synchronized (up.state) {
            // the instant of the decision is read under the monitor too, so that a report comes
            // wholly before or after it
            return decideWithUpstream(tables, first, ticker.read(), keys, cost, estimate, id,
                quotas, quotaEstimate, composition, up);
          }
        }
        Decision d = decide(tables, first, now, cost, estimate, id, quotas, composition, verdict);
        return reserve ? reservation(tables, first, now, keys, estimate, id, d, quotas,
            quotaEstimate) : d;
      } finally {
        unlockChain(first);
      }
    }
  }

  /**
   * Looks up every level's entry (creating it if need be) and locks them in the global lock
   * order, linking them by {@link KeyEntry#held} in level order, so that a call on several levels
   * needs no array; returns the first level's entry, or null, with nothing locked, when a new key
   * found its table full.
   */
  private @Nullable KeyEntry lockChain(BudgetTable[] tables, int[] lockOrder, List<String> keys) {
    KeyEntry first = null;
    for (int p = 0; p < lockOrder.length; p++) {
      int level = lockOrder[p];
      KeyEntry e = lockTracked(tables[level], keys.get(level));
      if (e == null && (e = lockLookedUp(tables[level], keys.get(level))) == null) {
        unlockChain(first);
        return null;
      }
      int above = 0; // levels above this one that are already held: its place in the chain
      for (int q = 0; q < p; q++) {
        if (lockOrder[q] < level) {
          above++;
        }
      }
      if (above == 0) {
        e.held = first;
        first = e;
      } else {
        KeyEntry before = first;
        for (int s = 1; s < above; s++) {
          before = before.held;
        }
        e.held = before.held;
        before.held = e;
      }
    }
    return first;
  }

  /** Unlinks and unlocks the entries of a chain that {@link #lockChain} returned. */
  private static void unlockChain(@Nullable KeyEntry first) {
    KeyEntry e = first;
    while (e != null) {
      KeyEntry next = e.held;
      e.held = null;
      e.unlock();
      e = next;
    }
  }

  /** Whether a reservation on these levels holds anything: model tokens or slots. */
  private static boolean numbersReservation(BudgetTable[] tables) {
    for (BudgetTable t : tables) {
      if (t.hasModelTokens || t.hasConcurrency || t.hasQuotas) {
        return true;
      }
    }
    return false;
  }

  private static List<Budget> levels(BudgetTable[] tables) {
    List<Budget> levels = new ArrayList<>(tables.length);
    for (BudgetTable t : tables) {
      levels.add(t.budget);
    }
    return levels;
  }

  private static Reservation reservation(BudgetTable[] tables, KeyEntry first, long now,
      List<String> keys, long estimate, long id, Decision d, @Nullable QuotaCall quotas,
      @Nullable Consumption quotaEstimate) {
    return reservation(tables, levels(tables), first, now, keys, estimate, id, d, quotas,
        quotaEstimate);
  }

  /**
   * The reservation of a decided call on {@code tables}, whose levels are {@code levels} (an
   * upstream's configured budget where its table holds the limits a report lowered).
   */
  private static Reservation reservation(BudgetTable[] tables, List<Budget> levels,
      KeyEntry first, long now, List<String> keys, long estimate, long id, Decision d,
      @Nullable QuotaCall quotas, @Nullable Consumption quotaEstimate) {
    long remainingTokens = Long.MAX_VALUE;
    long tokensReset = 0;
    KeyEntry e = first;
    for (int i = 0; i < tables.length; i++, e = e.held) {
      if (tables[i].hasModelTokens) {
        // a level a sequential deny never reached, too (its window and bucket stay as they were)
        tables[i].expireModelTokens(e, now);
        remainingTokens = Math.min(remainingTokens, tables[i].remainingModelTokens(e));
        tokensReset = Math.max(tokensReset, tables[i].modelTokensResetMs(e, now));
      }
    }
    List<LevelRemaining> byLevel = components(tables, first, now);
    if (quotas == null) {
      return new Reservation(d, levels, keys, estimate, d.allowed() ? id : 0,
          remainingTokens, tokensReset, 0, 0, List.of(), byLevel);
    }
    return new Reservation(d, levels, keys, estimate, d.allowed() ? id : 0,
        remainingTokens, tokensReset, quotaEstimate.spend(), quotas.nowMs,
        quotas.statuses(d.allowed()), byLevel);
  }

  /** What each component of every level admits after the decision, one per level. */
  private static List<LevelRemaining> components(BudgetTable[] tables, KeyEntry first, long now) {
    if (tables.length == 1) {
      return List.of(tables[0].components(first, now));
    }
    LevelRemaining[] each = new LevelRemaining[tables.length];
    KeyEntry e = first;
    for (int i = 0; i < tables.length; i++, e = e.held) {
      each[i] = tables[i].components(e, now);
    }
    return List.of(each);
  }

  /**
   * Fills {@code entries} with the keys' entries; with {@code create}, returns the index of a full
   * table that turned a new key away (else -1); without, leaves untracked keys' entries null.
   */
  private int lookUpAll(BudgetTable[] tables, List<String> keys, KeyEntry[] entries, boolean create) {
    for (int i = 0; i < tables.length; i++) {
      entries[i] = create ? lookUp(tables[i], keys.get(i)) : tables[i].keys.existing(keys.get(i));
      if (entries[i] == null && create) {
        return i;
      }
    }
    return -1;
  }

  /** Locks the non-null entries in order; if one was retired, unlocks them all and says false. */
  private static boolean lockAll(KeyEntry[] entries, int[] lockOrder) {
    boolean stale = false;
    for (int i : lockOrder) {
      KeyEntry e = entries[i];
      if (e != null) {
        e.lock();
        stale |= e.retired;
      }
    }
    if (stale) {
      unlockAll(entries, lockOrder);
    }
    return !stale;
  }

  private static void unlockAll(KeyEntry[] entries, int[] lockOrder) {
    for (int i = lockOrder.length - 1; i >= 0; i--) {
      KeyEntry e = entries[lockOrder[i]];
      if (e != null) {
        e.unlock();
      }
    }
  }

  /**
   * Several levels, root first, with every entry locked and chained from {@code first}.
   *
   * <p>Sequential: the levels run in order and the first deny decides, with the denying
   * component's retry. Reserve-then-commit: every level is checked, and a deny reports the
   * component that binds over all of them: one that waiting never clears (not retryable), else the
   * one with the longest wait, the first in order on a tie. Either way slots are taken only when
   * the call is admitted, {@code remaining} is the smallest over every component of every level
   * after the decision, and {@code resetAfterMs} is the deciding level's (allowed: the largest over
   * the levels). The buckets the call left fresh are forgotten once it is decided. With {@code
   * verdict} the same charges are made, and only {@link #VERDICT_ALLOWED} or {@link
   * #VERDICT_DENIED} is returned.
   */
  private static Decision decide(BudgetTable[] tables, KeyEntry first, long now, double cost,
      long estimate, long id, @Nullable QuotaCall quotas, Composition composition,
      boolean verdict) {
    int n = tables.length;
    if (composition == Composition.SEQUENTIAL) {
      KeyEntry e = first;
      for (int i = 0; i < n; i++, e = e.held) {
        Reason r = apply(tables[i], e, now, cost, estimate, id, composition);
        if (r == Reason.OK && quotas != null) {
          // the quotas run last in a level: what the level charged before them stays charged
          if (quotas.denies(i)) {
            r = Reason.QUOTA_EXCEEDED;
          } else {
            quotas.charge(i);
          }
        }
        if (r != Reason.OK) {
          // levels before i stay charged, as sequential order specifies; those after it are untouched
          Decision d = verdict ? VERDICT_DENIED : sequentialDeny(tables, first, i, e, now, cost,
              estimate, r, quotas);
          forgetFresh(tables, first, i);
          return d;
        }
      }
    } else {
      KeyEntry e = first;
      for (int i = 0; i < n; i++, e = e.held) {
        tables[i].normalize(e, now);
      }
      boolean quotaDenies = quotas != null && quotas.deniesAny();
      if (quotaDenies || denies(tables, first, cost, estimate)) {
        Decision d = verdict ? VERDICT_DENIED
            : bindingDeny(tables, first, now, cost, estimate, quotas);
        forgetFresh(tables, first, n - 1);
        return d;
      }
      e = first;
      for (int i = 0; i < n; i++, e = e.held) {
        tables[i].chargeWindow(e, now);
        tables[i].chargeBucket(e, now, cost);
        tables[i].chargeModelTokens(e, now, estimate, id);
      }
      if (quotas != null) {
        quotas.chargeAll();
      }
    }
    takeSlots(tables, first, now, id);
    Decision d = verdict ? VERDICT_ALLOWED : allowed(tables, first, now);
    forgetFresh(tables, first, n - 1);
    return d;
  }

  /**
   * The caller's levels and then its upstream, every entry locked and chained from {@code first}
   * (the upstream's last), the upstream's report state's monitor held.
   *
   * <p>When the upstream would deny, the caller's levels are checked first without charging
   * anything: if every component and quota of every level admits the call (which is when a
   * sequential run charges them all), the call is denied {@link Reason#UPSTREAM_LIMIT} with
   * nothing charged anywhere. Otherwise the levels decide as without an upstream, and if they
   * admit the call, the upstream, which admits it too, is charged: its window, its model tokens,
   * its slot and the counts its provider reported. A call with a turn that the upstream's order
   * does not admit (calls wait, and the turn does not name the first) is denied as one the
   * upstream has no room for, its wait the order's poll interval when the upstream has room; an
   * admitted call with a turn leaves the order and is counted in it.
   */
  private Reservation decideWithUpstream(BudgetTable[] tables, KeyEntry first, long now,
      List<String> keys, double cost, long estimate, long id, @Nullable QuotaCall quotas,
      @Nullable Consumption quotaEstimate, Composition composition, UpstreamCall up) {
    int n = tables.length;
    KeyEntry ue = first;
    for (int i = 0; i < n; i++) {
      ue = ue.held;
    }
    BudgetTable ut = up.table.view(up.state.budget());
    BudgetTable[] all = up.tables.clone();
    all[n] = ut;
    ut.normalize(ue, now);
    long wait = upstreamWaitMs(ut, ue, up.state, now, estimate,
        up.turn != null && up.turn.waiter() != null);
    boolean outOfTurn = false;
    if (wait == 0 && up.turn != null && !up.state.queue().admits(up.turn, now)) {
      wait = order.pollInterval().toMillis();
      outOfTurn = true;
    }
    if (wait > 0) {
      KeyEntry e = first;
      for (int i = 0; i < n; i++, e = e.held) {
        tables[i].normalize(e, now);
      }
      if (!denies(tables, first, cost, estimate) && (quotas == null || !quotas.deniesAny())) {
        long remaining = outOfTurn ? 0 : upstreamRemaining(ut, ue, up.state, now);
        e = first;
        for (int i = 0; i < n; i++, e = e.held) {
          remaining = Math.min(remaining, tables[i].remaining(e));
        }
        Decision d = new Decision(false, remaining, wait, Math.max(wait, ut.resetMs(ue, now)),
            Reason.UPSTREAM_LIMIT, true, ut.name);
        forgetFresh(tables, first, n - 1);
        return reservation(all, up.levels, first, now, up.keys, estimate, 0, d, quotas,
            quotaEstimate);
      }
    }
    Decision d = decide(tables, first, now, cost, estimate, id, quotas, composition, false);
    if (!d.allowed()) {
      return reservation(tables, first, now, keys, estimate, id, d, quotas, quotaEstimate);
    }
    ut.chargeWindow(ue, now);
    ut.chargeModelTokens(ue, now, estimate, id);
    ut.takeSlot(ue, now, id);
    up.state.admitted(now, estimate);
    if (up.turn != null) {
      up.state.queue().admitted(up.turn, now);
    }
    Decision allowed = allowed(all, first, now);
    long reported = upstreamRemaining(ut, ue, up.state, now);
    if (reported < allowed.remaining()) {
      allowed = Decision.allow(reported, allowed.resetAfterMs(), ut.name);
    }
    return reservation(all, up.levels, first, now, up.keys, estimate, id, allowed, quotas,
        quotaEstimate);
  }

  /**
   * The unit-cost calls the upstream admits now: its window's and slots', no more than the
   * requests its provider reported left, none while a report closes it.
   */
  private static long upstreamRemaining(BudgetTable t, KeyEntry e, UpstreamState state,
      long now) {
    if (state.closedForMs(now) > 0) {
      return 0;
    }
    Long left = state.requestsLeft(now);
    return left == null ? t.remaining(e) : Math.min(left, t.remaining(e));
  }

  /**
   * Milliseconds until the upstream, its entry brought to now, admits a call of {@code estimate}
   * model tokens if nothing else arrives: 0 when it admits it now, else the longest wait of what
   * denies it (its reports, its slots, its window, its model tokens).
   */
  private static long upstreamWaitMs(BudgetTable t, KeyEntry e, UpstreamState state, long now,
      long estimate, boolean waiting) {
    long wait = state.waitMs(now, estimate, waiting);
    for (Reason c : UPSTREAM_COMPONENTS) {
      if (t.denies(e, 0, estimate, c)) {
        wait = Math.max(wait, t.retryMs(e, now, 0, estimate, c));
      }
    }
    return wait;
  }

  /** The components an upstream's budget may have: it has no bucket. */
  private static final Reason[] UPSTREAM_COMPONENTS =
      {Reason.CONCURRENCY_LIMIT, Reason.RPM_LIMIT, Reason.TPM_LIMIT};

  /** The sequential deny of level {@code level} (entry {@code denying}) for {@code reason}. */
  private static Decision sequentialDeny(BudgetTable[] tables, KeyEntry first, int level,
      KeyEntry denying, long now, double cost, long estimate, Reason reason,
      @Nullable QuotaCall quotas) {
    long remaining = Long.MAX_VALUE;
    KeyEntry e = first;
    for (int j = 0; j < tables.length; j++, e = e.held) {
      remaining = Math.min(remaining,
          j <= level ? tables[j].remaining(e) : tables[j].remainingAt(e, now));
    }
    BudgetTable t = tables[level];
    if (reason == Reason.QUOTA_EXCEEDED) {
      return quotaDeny(t, denying, now, quotas.retryMs(level), remaining);
    }
    return t.decision(denying, now, reason, t.retryMs(denying, now, cost, estimate, reason),
        remaining);
  }

  /** A deny of level {@code t} by its quotas, which clear in {@code retry} ms. */
  private static Decision quotaDeny(BudgetTable t, KeyEntry e, long now, long retry,
      long remaining) {
    return new Decision(false, remaining, retry, Math.max(retry, t.resetMs(e, now)),
        Reason.QUOTA_EXCEEDED, true, t.name);
  }

  /** The allowed decision of levels just charged: the fewest remaining, the latest reset. */
  private static Decision allowed(BudgetTable[] tables, KeyEntry first, long now) {
    long remaining = Long.MAX_VALUE;
    long reset = 0;
    String binding = tables[0].name;
    KeyEntry e = first;
    for (int i = 0; i < tables.length; i++, e = e.held) {
      long r = tables[i].remaining(e);
      if (r < remaining) {
        remaining = r;
        binding = tables[i].name;
      }
      reset = Math.max(reset, tables[i].resetMs(e, now));
    }
    return Decision.allow(remaining, reset, binding);
  }

  /** Whether any component of any normalized level denies the call (reserve-then-commit). */
  private static boolean denies(BudgetTable[] tables, KeyEntry first, double cost, long estimate) {
    KeyEntry e = first;
    for (int i = 0; i < tables.length; i++, e = e.held) {
      BudgetTable t = tables[i];
      if (t.slotsFull(e) || t.windowFull(e) || t.bucketShort(e, cost)
          || t.modelTokensShort(e, estimate)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The reserve-then-commit deny of normalized levels of which at least one denies, charging
   * nothing.
   */
  private static Decision bindingDeny(BudgetTable[] tables, KeyEntry first, long now, double cost,
      long estimate, @Nullable QuotaCall quotas) {
    int level = -1;
    KeyEntry binding = first;
    Reason reason = Reason.OK;
    long retry = 0;
    KeyEntry e = first;
    long remaining = Long.MAX_VALUE;
    for (int i = 0; i < tables.length; i++, e = e.held) {
      BudgetTable t = tables[i];
      remaining = Math.min(remaining, t.remaining(e));
      Reason c = t.binding(e, now, cost, estimate);
      long wait = c == null ? 0 : t.retryMs(e, now, cost, estimate, c); // 0: never clears
      long quotaWait = quotas == null ? 0 : quotas.retryMs(i);
      if (quotaWait > 0 && (c == null || wait != 0 && quotaWait > wait)) {
        c = Reason.QUOTA_EXCEEDED; // its period's end: a quota always clears
        wait = quotaWait;
      }
      if (c == null) {
        continue;
      }
      if (level < 0 || wait == 0 && retry != 0 || retry != 0 && wait > retry) {
        level = i;
        binding = e;
        reason = c;
        retry = wait;
      }
    }
    if (reason == Reason.QUOTA_EXCEEDED) {
      return quotaDeny(tables[level], binding, now, retry, remaining);
    }
    return tables[level].decision(binding, now, reason, retry, remaining);
  }

  @Override
  public void reconcile(Reservation reservation, long actualModelTokens) {
    Args.notNull("reservation", reservation);
    Args.notNegative("actualModelTokens", actualModelTokens);
    reconcile(reservation,
        new Consumption(1, actualModelTokens, reservation.estimatedSpend()));
  }

  @Override
  public void reconcile(Reservation reservation, Consumption actual) {
    Args.notNull("reservation", reservation);
    Args.notNull("actual", actual);
    boolean tokens = reservation.reserved();
    boolean quotas = reservation.chargedQuotas();
    if (!tokens && !quotas) {
      return;
    }
    BudgetTable[] tables = tables(reservation.levels());
    int[] lockOrder = lockOrder(tables);
    List<String> keys = reservation.keys();
    // Only an under-estimate may need a model-token entry the store no longer tracks; a quota is
    // settled under its key's entry lock, so that no decision on the key sees it half done
    boolean create = quotas || actual.modelTokens() > reservation.estimate();
    KeyEntry[] entries = new KeyEntry[tables.length];
    while (true) {
      for (int i = 0; i < tables.length; i++) {
        String key = keys.get(i);
        // a full table cannot track the key: its quotas are settled under their counters' locks
        entries[i] = create ? lookUp(tables[i], key) : tables[i].keys.existing(key);
      }
      if (!lockAll(entries, lockOrder)) {
        continue;
      }
      try {
        long now = ticker.read();
        for (int i = 0; i < tables.length; i++) {
          KeyEntry e = entries[i];
          if (tokens && e != null) {
            tables[i].reconcileModelTokens(e, now, reservation.id(), reservation.estimate(),
                actual.modelTokens());
          }
          if (quotas) {
            settleQuotas(reservation, tables[i], i, actual);
          }
          if (e != null) {
            tables[i].forgetIfFresh(e);
          }
        }
        return;
      } finally {
        unlockAll(entries, lockOrder);
      }
    }
  }

  /**
   * Moves every quota level {@code i} of the reservation charged from its estimate to {@code
   * actual}, in the period it was charged in.
   */
  private void settleQuotas(Reservation reservation, BudgetTable t, int i, Consumption actual) {
    Consumption estimate = reservation.estimated();
    List<QuotaLimit> quotas = t.budget.quotas();
    long[] periods = t.quotaPeriods(reservation.quotaAtMs(), false);
    String key = reservation.keys().get(i);
    for (int j = 0; j < quotas.size(); j++) {
      QuotaUnit unit = quotas.get(j).unit();
      long charged = unit.amount(estimate);
      long used = unit.amount(actual);
      if (charged == 0 && used == 0) {
        continue;
      }
      QuotaBook.Counter c = used > charged
          ? quotaBook.counter(t.name, key, t.quotaIds[j], periods[2 * j], periods[2 * j + 1])
          : quotaBook.existing(t.name, key, t.quotaIds[j], periods[2 * j]);
      if (c != null) {
        c.settle(charged, used, unit != QuotaUnit.REQUESTS);
      }
    }
  }

  /** One step on one locked entry at the instant {@code now}. */
  @FunctionalInterface
  private interface LockedStep {
    void apply(BudgetTable table, KeyEntry entry, long now);
  }

  /**
   * Looks the entries up, locks them in the global order (again from the look-up when one was
   * retired meanwhile) and applies {@code step} to each one present, at one instant.
   */
  private void eachLocked(BudgetTable[] tables, KeyEntry[] entries, int[] lockOrder,
      Runnable lookUp, LockedStep step) {
    while (true) {
      lookUp.run();
      if (!lockAll(entries, lockOrder)) {
        continue;
      }
      try {
        long now = ticker.read();
        for (int i = 0; i < tables.length; i++) {
          if (entries[i] != null) {
            step.apply(tables[i], entries[i], now);
          }
        }
        return;
      } finally {
        unlockAll(entries, lockOrder);
      }
    }
  }

  @Override
  public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {
    checkLists(levels, keys);
    checkKeys(keys);
    Args.notNegative("modelTokens", modelTokens);
    BudgetTable[] tables = tables(levels);
    if (modelTokens == 0 || !limitsModelTokens(tables)) {
      return;
    }
    int[] lockOrder = lockOrder(tables);
    KeyEntry[] entries = new KeyEntry[tables.length];
    long id = reservationIds.incrementAndGet();
    eachLocked(tables, entries, lockOrder, () -> {
      for (int i = 0; i < tables.length; i++) {
        // only the levels charged track the key; a full table cannot take the charge (null)
        entries[i] = tables[i].hasModelTokens ? lookUp(tables[i], keys.get(i)) : null;
      }
    }, (t, e, now) -> {
      t.expireModelTokens(e, now);
      t.chargeModelTokens(e, now, modelTokens, id);
    });
  }

  private static boolean limitsModelTokens(BudgetTable[] tables) {
    for (BudgetTable t : tables) {
      if (t.hasModelTokens) {
        return true;
      }
    }
    return false;
  }

  @Override
  public void release(Reservation reservation) {
    Args.notNull("reservation", reservation);
    if (!reservation.holdsSlots()) {
      return;
    }
    BudgetTable[] tables = tables(reservation.levels());
    KeyEntry[] entries = new KeyEntry[tables.length];
    eachLocked(tables, entries, lockOrder(tables),
        () -> lookUpAll(tables, reservation.keys(), entries, false), // an untracked key holds no slot
        (t, e, now) -> t.releaseSlot(e, reservation.id()));
  }

  @Override
  public Optional<PlanAssignments> planAssignments() {
    return Optional.of(plans);
  }

  @Override
  public Optional<StoreAdministration> administration() {
    return Optional.of(administration);
  }

  @Override
  public Optional<QuotaPersistence> quotaPersistence() {
    return Optional.of(quotaFile);
  }

  /** How many entries {@link StoreAdministration#top} has read since the store was created. */
  long topReads() {
    return administration.topReads();
  }
}
