package io.github.llmratelimiter.core;

import java.util.Arrays;
import java.util.Iterator;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * The in-memory state of one budget: a {@link KeyEntry} per key, and the arithmetic of the window
 * and the bucket over an entry. Every method that takes an entry is called with its lock held.
 *
 * <p>Maintenance ({@link #maintain}) walks the table in passes, a bounded number of entries per
 * step: it drops the entries whose state equals a fresh one and ranks the busiest it saw for
 * {@link #topCandidates}. Decisions never wait for it and never do any of it.
 */
final class BudgetTable {

  /**
   * The fraction of a call's cost that a bucket may lack and still admit it: a call passes when
   * {@code tokens + cost * TOLERANCE >= cost}. It absorbs the floating-point error of the bucket's
   * arithmetic. Being relative to the cost, it never makes a call free: an admitted call is charged
   * its full cost, and a bucket short of it by at most this fraction is emptied, so an empty bucket
   * admits nothing, however small the cost, and the costs a bucket admits exceed the tokens it held
   * and regained by at most this fraction. (Whatever unit costs are counted in, the rule is the
   * same: doubling costs, capacity and refill changes no admission and no retry.)
   */
  static final double TOLERANCE = 1e-9;

  private static final long NANOS_PER_MS = 1_000_000L;
  /** Entries examined by the step a new key runs when the table is full, on the caller's thread. */
  static final int FULL_TABLE_STEP = 1_000;
  /** The busiest keys a maintenance pass keeps as candidates of {@link #topCandidates}. */
  static final int TOP_CANDIDATES = 1_024;
  /** Up to this many tracked keys, {@link #topCandidates} is every key. */
  static final int TOP_EXACT_KEYS = 2 * TOP_CANDIDATES;

  private static final KeyEntry[] NONE = new KeyEntry[0];
  /** Retry offered to a new key turned away because the table is full. */
  static final long TRACKED_KEYS_RETRY_MS = 1_000L;

  final Budget budget;
  final String name;
  /** Global lock order of this table within its store; multi-level calls lock by ascending order. */
  final int order;

  final boolean hasWindow;
  final int limit;
  final long windowNanos;

  final boolean hasBucket;
  final double capacity;
  /** The highest cost that can ever pass: the bucket's capacity, else infinity. */
  final double maxCost;
  final double refillPerSecond;
  final double refillPerNano;

  final boolean hasModelTokens;
  final long modelTokenLimit;
  final long modelTokenWindowNanos;

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

  BudgetTable(Budget budget, int order, long maxKeys) {
    this.budget = budget;
    this.name = budget.name();
    this.order = order;
    WindowLimit window = budget.window();
    this.hasWindow = window != null;
    this.limit = window == null ? 0 : (int) window.limit();
    this.windowNanos = window == null ? 0 : window.window().toNanos();
    BucketLimit bucket = budget.bucket();
    this.hasBucket = bucket != null;
    this.capacity = bucket == null ? 0 : bucket.capacity();
    this.maxCost = bucket == null ? Double.POSITIVE_INFINITY : capacity;
    this.refillPerSecond = bucket == null ? 0 : bucket.refillPerSecond();
    this.refillPerNano = refillPerSecond / 1e9;
    ModelTokenLimit modelTokens = budget.modelTokens();
    this.hasModelTokens = modelTokens != null;
    this.modelTokenLimit = modelTokens == null ? 0 : modelTokens.limit();
    this.modelTokenWindowNanos = modelTokens == null ? 0 : modelTokens.window().toNanos();
    this.maxKeys = maxKeys;
  }

  /**
   * Returns the key's entry, creating it; {@code null} when the key is new and the table is full
   * even after a maintenance step of at most {@link #FULL_TABLE_STEP} entries.
   */
  @Nullable KeyEntry entry(String key, long now) {
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
    return entries.computeIfAbsent(
        key, k -> new KeyEntry(k, initialRing(), capacity, now, hasModelTokens));
  }

  @Nullable KeyEntry existing(String key) {
    return entries.get(key);
  }

  int size() {
    return entries.size();
  }

  private int initialRing() {
    return hasWindow ? Math.min(limit, 4) : 0;
  }

  /** The entry's model-token window; only for a budget that limits model tokens. */
  private static ModelTokenLog modelTokens(KeyEntry e) {
    ModelTokenLog log = e.modelTokens;
    if (log == null) {
      throw new IllegalStateException("key '" + e.key + "' has no model-token window");
    }
    return log;
  }

  /** Brings the entry to {@code now}: expired timestamps dropped, the bucket refilled. */
  void normalize(KeyEntry e, long now) {
    if (hasWindow) {
      e.expire(now, windowNanos);
    }
    if (hasBucket) {
      e.refill(now, capacity, refillPerNano);
    }
    expireModelTokens(e, now);
  }

  /** Drops the model tokens that have left the window; a budget without them has nothing to do. */
  void expireModelTokens(KeyEntry e, long now) {
    if (hasModelTokens) {
      modelTokens(e).expire(now, modelTokenWindowNanos);
    }
  }

  boolean windowFull(KeyEntry e) {
    return hasWindow && e.size >= limit;
  }

  boolean bucketShort(KeyEntry e, double cost) {
    return hasBucket && e.tokens + cost * TOLERANCE < cost;
  }

  boolean modelTokensShort(KeyEntry e, long estimate) {
    return hasModelTokens && modelTokens(e).sum() + estimate > modelTokenLimit;
  }

  /** Appends the reservation's estimate when this budget limits model tokens and {@code id != 0}. */
  void chargeModelTokens(KeyEntry e, long now, long estimate, long id) {
    if (hasModelTokens && id != 0) {
      modelTokens(e).append(id, now, estimate);
    }
  }

  /** Model tokens counted in the window (never negative). */
  long usedModelTokens(KeyEntry e) {
    return Math.max(0, modelTokens(e).sum());
  }

  /** Model tokens still admitted in the window (never negative, even after an under-estimate). */
  long remainingModelTokens(KeyEntry e) {
    return Math.max(0, modelTokenLimit - modelTokens(e).sum());
  }

  /** Milliseconds until the model-token window is empty. */
  long modelTokensResetMs(KeyEntry e, long now) {
    if (!hasModelTokens || modelTokens(e).size() == 0) {
      return 0;
    }
    return ceilMs(modelTokens(e).newest() + modelTokenWindowNanos - now);
  }

  /**
   * Milliseconds until enough model tokens leave the window for {@code estimate} to fit: the
   * oldest entries leave first, so the wait ends when the entry that frees the last needed token
   * leaves.
   */
  long modelTokensRetryMs(KeyEntry e, long now, long estimate) {
    ModelTokenLog log = modelTokens(e);
    int leaving = log.freeing(log.sum() + estimate - modelTokenLimit);
    if (leaving < 0) {
      return Math.max(1, ceilMs(modelTokenWindowNanos)); // unreachable while estimate <= limit
    }
    return Math.max(1, ceilMs(log.time(leaving) + modelTokenWindowNanos - now));
  }

  void chargeWindow(KeyEntry e, long now) {
    if (hasWindow) {
      e.append(now, limit);
    }
  }

  void chargeBucket(KeyEntry e, double cost) {
    if (hasBucket) {
      e.tokens = Math.max(0, e.tokens - cost);
    }
  }

  /** Whole unit-cost calls both components admit now (the entry brought to now). */
  long remaining(KeyEntry e) {
    long r = Long.MAX_VALUE;
    if (hasWindow) {
      r = limit - e.size;
    }
    if (hasBucket) {
      r = Math.min(r, unitCalls(e.tokens));
    }
    return r;
  }

  /**
   * {@link #remaining} as of {@code now} without bringing the entry to now: for a level that a
   * sequential deny never reached, whose state the decision leaves as it was.
   */
  long remainingAt(KeyEntry e, long now) {
    long r = Long.MAX_VALUE;
    if (hasWindow) {
      r = limit - e.sizeAt(now, windowNanos);
    }
    if (hasBucket) {
      r = Math.min(r, unitCalls(e.tokensAt(now, capacity, refillPerNano)));
    }
    return r;
  }

  /** The unit-cost calls {@code tokens} pay for, one after the other, under {@link #TOLERANCE}. */
  private static long unitCalls(double tokens) {
    return (long) Math.floor(tokens + TOLERANCE);
  }

  /**
   * Milliseconds until every component is full again: the window and the model-token window empty,
   * the bucket exactly at capacity (a bucket that does not refill adds none).
   */
  long resetMs(KeyEntry e, long now) {
    long nanos = 0;
    if (hasWindow && e.size > 0) {
      nanos = e.newest() + windowNanos - now;
    }
    long ms = ceilMs(nanos);
    if (hasBucket && refillPerSecond > 0 && e.tokens < capacity) {
      ms = Math.max(ms, fullMs(capacity - e.tokens));
    }
    return Math.max(ms, modelTokensResetMs(e, now));
  }

  /** Milliseconds until a call of {@code cost} would pass both components, 0 if it passes now. */
  long waitMs(KeyEntry e, long now, double cost) {
    long ms = 0;
    if (windowFull(e)) {
      ms = ceilMs(e.oldest() + windowNanos - now);
    }
    if (bucketShort(e, cost) && refillPerSecond > 0) {
      ms = Math.max(ms, tokensMs(cost, e.tokens));
    }
    return ms;
  }

  /** Whether the component that denies with {@code component} denies this call now. */
  boolean denies(KeyEntry e, double cost, long estimate, Reason component) {
    if (component == Reason.RPM_LIMIT) {
      return windowFull(e);
    } else if (component == Reason.BURST_LIMIT) {
      return bucketShort(e, cost);
    } else if (component == Reason.TPM_LIMIT) {
      return modelTokensShort(e, estimate);
    }
    throw new IllegalStateException("no component denies with " + component);
  }

  /** Whether waiting ever clears a deny of {@code component}: all but a bucket without refill. */
  boolean clears(Reason component) {
    return component != Reason.BURST_LIMIT || refillPerSecond > 0;
  }

  /**
   * Milliseconds after which {@code component}, which denies the call now, admits it if nothing
   * else arrives, at least 1; 0 when waiting never clears it ({@link #clears}).
   */
  long retryMs(KeyEntry e, long now, double cost, long estimate, Reason component) {
    if (component == Reason.RPM_LIMIT) {
      return Math.max(1, ceilMs(e.oldest() + windowNanos - now));
    } else if (component == Reason.BURST_LIMIT) {
      return refillPerSecond == 0 ? 0 : tokensMs(cost, e.tokens);
    }
    return modelTokensRetryMs(e, now, estimate);
  }

  /** The components of a level, in the order a sequential call runs them. */
  private static final Reason[] COMPONENTS = {Reason.RPM_LIMIT, Reason.BURST_LIMIT, Reason.TPM_LIMIT};

  /**
   * The component of this level that binds a call every component was checked for
   * (reserve-then-commit): of those that deny it, the first that waiting never clears, else the
   * first with the longest wait; {@code null} if none denies.
   */
  @Nullable Reason binding(KeyEntry e, long now, double cost, long estimate) {
    Reason binding = null;
    long longest = 0;
    for (Reason c : COMPONENTS) {
      if (!denies(e, cost, estimate, c)) {
        continue;
      }
      if (!clears(c)) {
        return c;
      }
      long wait = retryMs(e, now, cost, estimate, c);
      if (binding == null || wait > longest) {
        binding = c;
        longest = wait;
      }
    }
    return binding;
  }

  /**
   * The decision of this level, the only one of the call, for what {@code apply} returned, with
   * the entry's lock held. Every outcome of a one-level call is built here, in one place, so that a
   * caller that inlines it and reads only some fields lets the JIT drop the allocation.
   *
   * <p>A sequential deny reports the component that denied; a reserve-then-commit deny the one that
   * binds ({@link #binding}). {@code remaining} is the entry's after the decision.
   */
  Decision decision(
      KeyEntry e, long now, double cost, long estimate, Reason reason, Composition composition) {
    Reason r = reason;
    if (r != Reason.OK && composition == Composition.RESERVE_COMMIT) {
      r = binding(e, now, cost, estimate);
    }
    long retry = r == Reason.OK ? 0 : retryMs(e, now, cost, estimate, r);
    return decision(e, now, r, retry, remaining(e));
  }

  /**
   * The decision of this level for {@code reason} with its retry ({@link #retryMs}, 0 when
   * allowed) and the call's {@code remaining}, with the entry's lock held.
   */
  Decision decision(KeyEntry e, long now, Reason reason, long retry, long remaining) {
    boolean allowed = reason == Reason.OK;
    return new Decision(
        allowed, remaining, retry, resetMs(e, now), reason, allowed || retry > 0, name);
  }

  /** Whether the budget admits a call of this cost and estimate at all (else {@link #neverFits}). */
  boolean fits(double cost, long estimate) {
    return budget.fits(cost) && budget.fitsModelTokens(estimate);
  }

  Decision neverFits() {
    return Decision.finalDeny(Reason.COST_EXCEEDS_CAPACITY, 0, 0, name);
  }

  Decision tableFull() {
    return Decision.retryableDeny(Reason.TRACKED_KEYS_LIMIT, 0, TRACKED_KEYS_RETRY_MS, 0, name);
  }

  /**
   * Milliseconds until the bucket, holding {@code tokens}, admits a call of {@code cost}: the exact
   * wait, {@code (cost - tokens) / refillPerSecond * 1000}, less half the {@link #TOLERANCE} of the
   * cost, rounded up; at least 1. The tolerance admits the call from the instant the bucket lacks
   * less than it, so this is the first whole millisecond at which the call passes, and the half
   * kept in reserve is far above the floating-point error of the refill: a client that waits it
   * is admitted if nothing else arrives. It is at most 1 ms below the exact wait rounded up.
   */
  long tokensMs(double cost, double tokens) {
    double ms = (cost - tokens) * 1000.0 / refillPerSecond;
    double slack = cost * TOLERANCE * 500.0 / refillPerSecond;
    return Math.max(1, (long) Math.ceil(ms - slack));
  }

  /**
   * Milliseconds until the bucket regains {@code deficit} tokens, rounded up, at least 1: when it
   * is exactly full again.
   */
  long fullMs(double deficit) {
    return Math.max(1, (long) Math.ceil(deficit * 1000.0 / refillPerSecond));
  }

  static long ceilMs(long nanos) {
    return nanos <= 0 ? 0 : (nanos - 1) / NANOS_PER_MS + 1;
  }

  /**
   * Applies a reconciliation: the reservation's entry takes the actual amount while it is in the
   * window; once it has left, only an under-estimate is charged, as a new entry at {@code now}.
   */
  void reconcileModelTokens(KeyEntry e, long now, long id, long estimate, long actual) {
    if (!hasModelTokens) {
      return;
    }
    ModelTokenLog log = modelTokens(e);
    log.expire(now, modelTokenWindowNanos);
    if (!log.replace(id, actual) && actual > estimate) {
      log.append(id, now, actual - estimate);
    }
  }

  /**
   * Whether the entry, at {@code now}, equals a fresh one exactly (a bucket at capacity, not within
   * the tolerance of it): dropping it grants nothing.
   */
  boolean isFresh(KeyEntry e, long now) {
    normalize(e, now);
    return e.size == 0
        && (!hasModelTokens || modelTokens(e).size() == 0)
        && (!hasBucket || e.tokens >= capacity);
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

  private void retire(KeyEntry e) {
    e.retired = true;
    entries.remove(e.key, e);
  }

  /**
   * One maintenance step: examines at most {@code maxEntries} entries, continuing the pass under
   * way or starting a new one, and returns how many it examined.
   *
   * <p>Each examined entry that is not in use and equals a fresh one at {@code now} is retired and
   * dropped (which grants nothing); every other is ranked by its use. An entry in use is skipped,
   * not waited for, and ranked on the state it had when last released. A pass sees every entry
   * tracked when it started and still tracked when it gets there. Only one step runs at a time: a
   * step that finds another under way examines nothing and returns 0.
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
      busiest.offer(e, use(e)); // in use now: a racy read is good enough to rank it
      return;
    }
    try {
      if (e.retired) {
        return;
      }
      if (isFresh(e, now)) {
        retire(e);
      } else {
        busiest.offer(e, use(e));
      }
    } finally {
      e.unlock();
    }
  }

  /** The entry's {@link KeySnapshot#utilization()}, as of its last normalization. */
  private double use(KeyEntry e) {
    ModelTokenLog log = e.modelTokens;
    return KeySnapshot.utilizationOf(hasWindow ? e.size : 0, limit, hasBucket ? e.tokens : 0,
        capacity, log == null ? 0 : Math.max(0, log.sum()), modelTokenLimit);
  }

  /**
   * The entries {@link RateLimitStore#top} ranks: every tracked one (at most {@link
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
