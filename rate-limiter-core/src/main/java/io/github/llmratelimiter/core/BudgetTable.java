package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.IdentityCache;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * One budget's limits (its defaults, or a variant's) over its name's {@link KeyTable}: the
 * arithmetic of the window, the bucket, the model tokens and the slots over an entry, under these
 * limits. Every method that takes an entry is called with its lock held.
 *
 * <p>The budget's defaults have one table per store; each variant gets one over the same {@link
 * KeyTable} ({@link #view}), so a variant's call decides on the entries every call of the name
 * shares, against its own limits, and an entry's state holds no limit.
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
  /** Retry offered to a new key turned away because the table is full. */
  static final long TRACKED_KEYS_RETRY_MS = 1_000L;
  /** The variants a budget's table keeps resolved; a call with any further variant resolves its own. */
  static final int MAX_VARIANTS = 1_024;
  /** The views a table finds by their budget's identity. */
  static final int RECENT_VIEWS = 16;

  final Budget budget;
  final String name;
  /** The state this budget shares with its defaults and their other variants. */
  final KeyTable keys;
  /** The entries of {@link #keys}, one pointer nearer to a call's lookup. */
  private final ConcurrentHashMap<String, KeyEntry> entries;
  /** Global lock order of this table's keys within its store (its {@link KeyTable}'s). */
  final int order;
  /** The variants of this (defaults') table resolved so far; empty on a variant's table. */
  private final ConcurrentHashMap<Budget, BudgetTable> variants;
  /**
   * The views resolved last, by the budget's identity: a policy hands every call the same budget
   * instance, so a variant's call finds its table without hashing the budget (its quotas and
   * defaults included).
   */
  private final IdentityCache<Budget, BudgetTable> recentViews = new IdentityCache<>(RECENT_VIEWS);

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

  final boolean hasConcurrency;
  final int concurrencyLimit;
  final long leaseNanos;

  /** Whether the budget has a quota: its calls are decided by {@code reserve} only. */
  final boolean hasQuotas;

  /** Each quota's {@link QuotaLimit#stateId()}, in the budget's order. */
  final String[] quotaIds;

  /**
   * The periods of the quotas as last computed: per quota its start and end, epoch milliseconds
   * ({@code [start0, end0, start1, end1, ...]}); replaced whole once an instant falls outside one.
   */
  private volatile long[] periods = new long[0];

  /** The table of a budget's defaults, over a new key table. */
  BudgetTable(Budget defaults, int order, long maxKeys) {
    this(defaults, new KeyTable(defaults.name(), order, maxKeys), true);
  }

  private BudgetTable(Budget budget, KeyTable keys, boolean defaults) {
    this.budget = budget;
    this.name = budget.name();
    this.keys = keys;
    this.entries = keys.entries();
    this.order = keys.order;
    this.variants = new ConcurrentHashMap<>(defaults ? 16 : 1);
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
    ConcurrencyLimit concurrency = budget.concurrency();
    this.hasConcurrency = concurrency != null;
    this.concurrencyLimit = concurrency == null ? 0 : (int) concurrency.limit();
    this.leaseNanos = concurrency == null ? 0 : concurrency.leaseTimeout().toNanos();
    this.hasQuotas = !budget.quotas().isEmpty();
    this.quotaIds = budget.quotas().stream().map(QuotaLimit::stateId).toArray(String[]::new);
  }

  /**
   * The table of {@code b} over this (defaults') table's keys: this table when {@code b} equals
   * its budget, else {@code b}'s variant table.
   *
   * @throws IllegalArgumentException if {@code b}'s defaults differ from this table's budget
   */
  BudgetTable view(Budget b) {
    if (b == budget) {
      return this;
    }
    BudgetTable v = recentViews.find(b);
    if (v != null) {
      return v;
    }
    if (b.equals(budget)) {
      recentViews.put(b, this);
      return this;
    }
    v = variants.get(b.requireSameDefaults(budget));
    if (v == null) {
      v = new BudgetTable(b, keys, false);
      if (variants.size() >= MAX_VARIANTS) {
        return v; // not kept: a bounded set of variants (plans) is resolved once
      }
      BudgetTable raced = variants.putIfAbsent(b, v);
      v = raced != null ? raced : v;
    }
    recentViews.put(b, v);
    return v;
  }

  /** The key's tracked entry, or null (a decision's lookup: {@link KeyTable#existing}). */
  @Nullable KeyEntry existing(String key) {
    return entries.get(key);
  }

  /** The entry's model-token window; only for a budget that limits model tokens. */
  private static ModelTokenLog modelTokens(KeyEntry e) {
    ModelTokenLog log = e.modelTokens;
    if (log == null) {
      throw new IllegalStateException("key '" + e.key + "' has no model-token window");
    }
    return log;
  }

  /** The entry's slots; only for a budget that limits concurrency. */
  private static LeaseSet leases(KeyEntry e) {
    LeaseSet leases = e.leases;
    if (leases == null) {
      throw new IllegalStateException("key '" + e.key + "' has no slots");
    }
    return leases;
  }

  /**
   * Brings the entry to {@code now} under these limits: expired timestamps, model tokens and
   * leases dropped, the bucket refilled and cut down to this capacity; remembers these limits as
   * the entry's last.
   */
  void normalize(KeyEntry e, long now) {
    if (e.limits != this) {
      e.limits = this;
    }
    if (hasWindow) {
      e.expire(now, windowNanos);
    }
    if (hasBucket) {
      e.refill(now, capacity, refillPerNano);
    }
    expireModelTokens(e, now);
    if (hasConcurrency) {
      leases(e).expire(now);
    }
  }

  /** Drops the model tokens that have left the window; a budget without them has nothing to do. */
  void expireModelTokens(KeyEntry e, long now) {
    if (hasModelTokens) {
      modelTokens(e).expire(now, modelTokenWindowNanos);
    }
  }

  /**
   * Forgets a bucket that a call left full under these limits, with no admission in the window:
   * the key is then fresh under any limits, as a Redis state deleted at once. Called with the
   * entry brought to now, after the call's decision was taken.
   */
  void forgetIfFresh(KeyEntry e) {
    if (hasBucket && e.size == 0 && e.tokens >= capacity) {
      e.tokens = Double.POSITIVE_INFINITY;
    }
  }

  boolean slotsFull(KeyEntry e) {
    return hasConcurrency && leases(e).size() >= concurrencyLimit;
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

  /** Takes a slot for reservation {@code id}, leased until {@code now} plus the lease timeout. */
  void takeSlot(KeyEntry e, long now, long id) {
    if (hasConcurrency && id != 0) {
      leases(e).add(id, now + leaseNanos);
    }
  }

  /** Gives back reservation {@code id}'s slot; nothing when it holds none here. */
  void releaseSlot(KeyEntry e, long id) {
    if (hasConcurrency) {
      leases(e).remove(id);
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

  void chargeBucket(KeyEntry e, long now, double cost) {
    if (hasBucket) {
      e.charge(now, cost);
    }
  }

  /** Whole unit-cost calls every component admits now (the entry brought to now). */
  long remaining(KeyEntry e) {
    long r = Long.MAX_VALUE;
    if (hasWindow) {
      r = Math.max(0, limit - e.size);
    }
    if (hasBucket) {
      r = Math.min(r, unitCalls(e.tokens));
    }
    if (hasConcurrency) {
      r = Math.min(r, Math.max(0, concurrencyLimit - leases(e).size()));
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
      r = Math.max(0, limit - e.sizeAt(now, windowNanos));
    }
    if (hasBucket) {
      r = Math.min(r, unitCalls(e.tokensAt(now, capacity, refillPerNano)));
    }
    if (hasConcurrency) {
      r = Math.min(r, Math.max(0, concurrencyLimit - leases(e).liveAt(now)));
    }
    return r;
  }

  /**
   * What each component admits at {@code now}, without bringing the entry to now (as {@link
   * #remainingAt}): a level the call reached, brought to now, reads the same, and so does one a
   * sequential deny never reached, as it stands. The model tokens are read as they are: the
   * caller drops what has left their window first.
   */
  LevelRemaining components(KeyEntry e, long now) {
    long window = Long.MAX_VALUE;
    long windowReset = 0;
    if (hasWindow) {
      int size = e.sizeAt(now, windowNanos);
      window = Math.max(0, limit - size);
      windowReset = size > 0 ? ceilMs(e.newest() + windowNanos - now) : 0;
    }
    long bucket = Long.MAX_VALUE;
    long bucketReset = 0;
    if (hasBucket) {
      double tokens = e.tokensAt(now, capacity, refillPerNano);
      bucket = unitCalls(tokens);
      bucketReset = refillPerSecond > 0 && tokens < capacity ? fullMs(capacity - tokens) : 0;
    }
    long slots = hasConcurrency ? Math.max(0, concurrencyLimit - leases(e).liveAt(now))
        : Long.MAX_VALUE;
    long tokens = hasModelTokens ? remainingModelTokens(e) : Long.MAX_VALUE;
    return new LevelRemaining(name, window, windowReset, bucket, bucketReset, slots, tokens,
        modelTokensResetMs(e, now));
  }

  /** The unit-cost calls {@code tokens} pay for, one after the other, under {@link #TOLERANCE}. */
  private static long unitCalls(double tokens) {
    return (long) Math.floor(tokens + TOLERANCE);
  }

  /**
   * Milliseconds until every component is full again: the window and the model-token window
   * empty, the bucket exactly at capacity (a bucket that does not refill adds none). Slots held add
   * none: they free when their calls end, which no clock tells.
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

  /** Milliseconds until a call of {@code cost} would pass every component, 0 if it passes now. */
  long waitMs(KeyEntry e, long now, double cost) {
    long ms = 0;
    if (slotsFull(e)) {
      ms = slotsMs(e, now);
    }
    if (windowFull(e)) {
      ms = Math.max(ms, windowMs(e, now));
    }
    if (bucketShort(e, cost) && refillPerSecond > 0) {
      ms = Math.max(ms, tokensMs(e, now, cost));
    }
    return ms;
  }

  /**
   * Milliseconds until the window's oldest admissions have left it so that one more fits: with
   * more admissions than the limit (a call with a smaller limit), all but {@code limit - 1} must
   * leave.
   */
  private long windowMs(KeyEntry e, long now) {
    return Math.max(1, ceilMs(e.at(e.size - limit) + windowNanos - now));
  }

  /** Milliseconds until the earliest lease expires, or more when more slots are held than admitted. */
  private long slotsMs(KeyEntry e, long now) {
    LeaseSet leases = leases(e);
    return Math.max(1, ceilMs(leases.expiryAt(leases.size() - concurrencyLimit) - now));
  }

  /** Whether the component that denies with {@code component} denies this call now. */
  boolean denies(KeyEntry e, double cost, long estimate, Reason component) {
    if (component == Reason.CONCURRENCY_LIMIT) {
      return slotsFull(e);
    } else if (component == Reason.RPM_LIMIT) {
      return windowFull(e);
    } else if (component == Reason.BURST_LIMIT) {
      return bucketShort(e, cost);
    } else if (component == Reason.TPM_LIMIT) {
      return modelTokensShort(e, estimate);
    }
    throw new IllegalStateException("no component denies with " + component);
  }

  /**
   * Whether waiting ever clears a deny of {@code component}: all but a bucket without refill (a
   * lease always expires).
   */
  boolean clears(Reason component) {
    return component != Reason.BURST_LIMIT || refillPerSecond > 0;
  }

  /**
   * Milliseconds after which {@code component}, which denies the call now, admits it if nothing
   * else arrives (for slots: if no call in flight is released either, so the earliest lease has
   * to expire), at least 1; 0 when waiting never clears it ({@link #clears}).
   */
  long retryMs(KeyEntry e, long now, double cost, long estimate, Reason component) {
    if (component == Reason.CONCURRENCY_LIMIT) {
      return slotsMs(e, now);
    } else if (component == Reason.RPM_LIMIT) {
      return windowMs(e, now);
    } else if (component == Reason.BURST_LIMIT) {
      return refillPerSecond == 0 ? 0 : tokensMs(e, now, cost);
    }
    return modelTokensRetryMs(e, now, estimate);
  }

  /** The components of a level, in the order a sequential call runs them. */
  private static final Reason[] COMPONENTS =
      {Reason.CONCURRENCY_LIMIT, Reason.RPM_LIMIT, Reason.BURST_LIMIT, Reason.TPM_LIMIT};

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

  /**
   * The periods of the budget's quotas that hold {@code nowMs}: per quota its start and end,
   * computed on the calendar once per period and shared by the calls within it.
   */
  long[] quotaPeriods(long nowMs) {
    return quotaPeriods(nowMs, true);
  }

  /**
   * The periods of the budget's quotas that hold {@code atMs}, from the cache when it holds them,
   * else computed (and cached only when {@code cache}: an instant of the past must not replace
   * the current periods).
   */
  long[] quotaPeriods(long nowMs, boolean cache) {
    long[] p = periods;
    List<QuotaLimit> quotas = budget.quotas();
    if (p.length == 2 * quotas.size()) {
      boolean valid = true;
      for (int j = 0; j < p.length && valid; j += 2) {
        valid = p[j] <= nowMs && nowMs < p[j + 1];
      }
      if (valid) {
        return p;
      }
    }
    p = new long[2 * quotas.size()];
    Instant now = Instant.ofEpochMilli(nowMs);
    for (int j = 0; j < quotas.size(); j++) {
      QuotaLimit q = quotas.get(j);
      p[2 * j] = q.period().start(now, q.zone()).toEpochMilli();
      p[2 * j + 1] = q.period().end(now, q.zone()).toEpochMilli();
    }
    if (cache) {
      periods = p;
    }
    return p;
  }

  /** Whether the budget admits a call of this cost and estimate at all, its quotas included. */
  boolean fits(double cost, Consumption estimate) {
    return fits(cost, estimate.modelTokens()) && budget.fitsQuotas(estimate);
  }

  Decision neverFits() {
    return Decision.finalDeny(Reason.COST_EXCEEDS_CAPACITY, 0, 0, name);
  }

  Decision tableFull() {
    return Decision.retryableDeny(Reason.TRACKED_KEYS_LIMIT, 0, TRACKED_KEYS_RETRY_MS, 0, name);
  }

  /**
   * The most steps by which {@link #tokensMs} moves its estimate, each way: the estimate is within
   * a few milliseconds of the answer for capacities up to 10^9 and refills down to 10^-3 a second.
   */
  private static final int RETRY_STEPS = 64;

  /**
   * Milliseconds until the bucket of {@code e}, short of {@code cost} at {@code now}, admits a
   * call of {@code cost} if nothing else arrives: the first whole millisecond R, at least 1, at
   * which {@link #admitsAfter} holds, the very test and refill a call at {@code now + R} runs, so
   * a client that waits R is admitted and one that waits R - 1 is not. The exact wait less the
   * {@link #TOLERANCE}, {@code (cost - cost * TOLERANCE - tokens) / refillPerSecond * 1000}
   * rounded up, is the estimate, which floating point may put a few milliseconds off; it is then
   * moved 1 ms at a time (at most {@value #RETRY_STEPS} steps each way) until the test holds at R
   * and not at R - 1. Admission only grows with the time waited, so that R is the first. A cost
   * above the capacity, which no wait admits (a snapshot's unit-cost call under a capacity below
   * 1), gets the estimate as it is.
   */
  long tokensMs(KeyEntry e, long now, double cost) {
    double tokens = e.tokens;
    double since = (double) (now - e.refilledAt); // 0, unless the clock went back
    double estimate = Math.ceil((cost - cost * TOLERANCE - tokens) * 1000.0 / refillPerSecond);
    long ms = estimate >= 1 ? (long) estimate : 1;
    if (cost > capacity) {
      return ms;
    }
    for (int i = 0; i < RETRY_STEPS && ms > 1 && admitsAfter(tokens, since, ms - 1, cost); i++) {
      ms--;
    }
    for (int i = 0; i < RETRY_STEPS && !admitsAfter(tokens, since, ms, cost); i++) {
      ms++;
    }
    return ms;
  }

  /**
   * Whether a bucket holding {@code tokens}, last refilled {@code since} ns before now, admits a
   * call of {@code cost} {@code ms} milliseconds from now: {@link KeyEntry#refill} then {@link
   * #bucketShort}, in the same operations (the refill's elapsed time as a double, times the refill
   * per nanosecond, added, capped at the capacity; then the tolerance).
   */
  private boolean admitsAfter(double tokens, double since, long ms, double cost) {
    double refilled = Math.min(capacity, tokens + (since + ms * 1e6) * refillPerNano);
    return refilled + cost * TOLERANCE >= cost;
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
   * Whether the entry, at {@code now} and under these limits, equals a fresh one exactly (a bucket
   * at capacity, not within the tolerance of it; no slot held): dropping it grants nothing these
   * limits would not. Drops what has left the windows and the expired leases (which depends on
   * time alone), and leaves the bucket as it is.
   */
  boolean isFreshAt(KeyEntry e, long now) {
    if (hasWindow) {
      e.expire(now, windowNanos);
    }
    expireModelTokens(e, now);
    if (hasConcurrency) {
      leases(e).expire(now);
    }
    return e.size == 0
        && (!hasModelTokens || modelTokens(e).size() == 0)
        && (!hasConcurrency || leases(e).size() == 0)
        && (!hasBucket || e.tokensAt(now, capacity, refillPerNano) >= capacity);
  }

  /**
   * The entry's {@link KeySnapshot#utilization()} at {@code now} under these limits, as of what
   * was dropped last ({@code locked}: with the entry's lock held; else a racy read).
   */
  double use(KeyEntry e, long now, boolean locked) {
    ModelTokenLog log = e.modelTokens;
    LeaseSet leases = e.leases;
    double tokens = !hasBucket ? 0
        : locked ? e.tokensAt(now, capacity, refillPerNano) : Math.min(capacity, e.tokens);
    return KeySnapshot.utilizationOf(hasWindow ? e.size : 0, limit, tokens, capacity,
        log == null ? 0 : Math.max(0, log.sum()), modelTokenLimit,
        leases == null ? 0 : leases.size(), concurrencyLimit);
  }
}
