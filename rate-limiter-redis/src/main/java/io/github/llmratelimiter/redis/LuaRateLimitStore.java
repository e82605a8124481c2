package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.LevelRemaining;
import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.internal.Args;
import io.lettuce.core.RedisException;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.output.CommandOutput;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The store's Redis side: each decision is one call of {@code acquire.lua} over every level's keys.
 * Bad input is rejected before Redis is asked; a Redis failure surfaces as Lettuce's {@code
 * RedisException}, which {@link GuardedRedisStore} turns into the failure policy.
 *
 * <p>Time is the Redis server's ({@code TIME}, microseconds) unless a {@link Ticker} is given: then
 * the ticker's nanoseconds are sent with each call, and keys live at least {@value
 * #TICKER_MIN_TTL_MS} ms of wall-clock time, since ticker time need not follow the wall clock.
 *
 * <p>Quota periods follow a wall clock of this process ({@link InstantSource}), never Redis's: the
 * periods of a call are computed here and sent with it ({@link QuotaFrame}), and its counters are
 * keys under the call's hash tag, so one script decides and charges them with the rest. The
 * instances sharing a prefix must have clocks that agree on the period boundaries; a call near a
 * boundary on a clock a little ahead counts in the next period.
 */
final class LuaRateLimitStore implements RateLimitStore {

  static final long TICKER_MIN_TTL_MS = 3_600_000L;

  private static final LuaScript ACQUIRE = LuaScript.load("acquire.lua");
  private static final LuaScript RECONCILE = LuaScript.load("reconcile.lua");
  private static final LuaScript REFUND = LuaScript.load("refund.lua");
  private static final LuaScript RELEASE = LuaScript.load("release.lua");
  private static final LuaScript HEARTBEAT = LuaScript.load("heartbeat.lua");
  private static final LuaScript RENEW = LuaScript.load("renew.lua");
  private static final LuaScript CHARGE_MODEL_TOKENS = LuaScript.load("charge-model-tokens.lua");
  private static final LuaScript WRITE_BACK = LuaScript.load("write-back.lua");
  private static final LuaScript REPORT = LuaScript.load("report.lua");
  private static final LuaScript UPSTREAM_STATUS = LuaScript.load("upstream-status.lua");
  private static final LuaScript UPSTREAM_ACQUIRE = LuaScript.load("upstream-acquire.lua");
  /**
   * How many times a call to an upstream on another Cluster slot is tried when the root's
   * counter has reached the id the upstream numbered (each try numbers past the root's counter).
   */
  private static final int CONFLICT_TRIES = 3;
  /**
   * The numbers acquire.lua reads for a call to an upstream, after the figures' flag: fifteen of
   * its UPSTREAM, six of its ORDER.
   */
  private static final int UPSTREAM_NUMBERS = 21;
  /** An empty bulk string: the quota argument of a call with a turn but no quotas. */
  private static final byte[] EMPTY_ARG = ScriptArgs.bulkOfString("");

  /** How long Redis remembers a batch written back, in ms, so that it is applied once: a day. */
  static final long WRITE_BACK_MARKER_MS = 86_400_000L;

  /**
   * Reservation ids numbered by Redis are above this (2^52), so they never meet the small ids of
   * an in-memory fallback, and stay exact in Lua's doubles.
   */
  static final long RESERVATION_ID_BASE = 1L << 52;

  private final RedisLink link;
  private final RedisKeys layout;
  private final @Nullable Ticker ticker;
  /** The clock of quota periods. */
  private final InstantSource wallClock;
  private final ConcurrentHashMap<String, ScriptBudget> budgets = new ConcurrentHashMap<>();
  /** The health of each master: its silence clock (and its circuit breaker, for the guard). */
  private final RedisMasters masters;
  /** The server's clock as this process knows it; {@code null} when time is the ticker's. */
  private final @Nullable RedisClock serverClock;
  private final RedisPlans plans;
  private final RedisAdministration administration;
  private final Monitoring monitoring;
  /** The slot lease in the scripts' time units (see acquire.lua and renew.lua). */
  private final double slotLeaseUnits;
  /** The upstreams' fair order, created when first asked for. */
  private volatile @Nullable RedisUpstreamOrder order;

  LuaRateLimitStore(RedisLink link, RedisKeys layout, @Nullable Ticker ticker, RedisMasters masters,
      Duration slotLease, InstantSource wallClock) {
    this.link = link;
    this.wallClock = wallClock;
    this.slotLeaseUnits = ticker == null ? slotLease.toNanos() / 1000.0 : slotLease.toNanos();
    this.layout = layout;
    this.ticker = ticker;
    this.masters = masters;
    this.serverClock = ticker == null ? new RedisClock(System.nanoTime()) : null;
    this.plans = new RedisPlans(link, layout);
    this.monitoring = new Monitoring(layout, link.cluster());
    this.administration = new RedisAdministration(this, link, layout, monitoring);
  }

  /**
   * A validated call: decided without Redis ({@code decided} set), or to run on Redis; {@code
   * reserve} when it reserves {@code estimate} model tokens; {@code quotas} when a level has
   * quotas (what it charges them, and their periods); {@code upstream} when the call goes to an
   * upstream, whose budget is then the last of {@code levels}, its name the last of {@code keys};
   * {@code turn} when the call takes its place in the upstream's fair order.
   */
  record Call(
      List<Budget> levels, List<String> keys, double cost, long estimate, boolean reserve,
      Composition composition, @Nullable Decision decided, @Nullable QuotaFrame quotas,
      @Nullable Upstream upstream, @Nullable UpstreamTurn turn) {

    Call(List<Budget> levels, List<String> keys, double cost, long estimate, boolean reserve,
        Composition composition, @Nullable Decision decided, @Nullable QuotaFrame quotas,
        @Nullable Upstream upstream) {
      this(levels, keys, cost, estimate, reserve, composition, decided, quotas, upstream, null);
    }

    /** The same call with a turn in its upstream's order. */
    Call withTurn(UpstreamTurn turn) {
      return new Call(levels, keys, cost, estimate, reserve, composition, decided, quotas,
          upstream, turn);
    }

    Call(List<Budget> levels, List<String> keys, double cost, long estimate, boolean reserve,
        Composition composition, @Nullable Decision decided) {
      this(levels, keys, cost, estimate, reserve, composition, decided, null, null);
    }

    Call(List<Budget> levels, List<String> keys, double cost, long estimate, boolean reserve,
        Composition composition, @Nullable Decision decided, @Nullable QuotaFrame quotas) {
      this(levels, keys, cost, estimate, reserve, composition, decided, quotas, null);
    }

    /** The caller's levels: all but the upstream's. */
    int callerLevels() {
      return upstream == null ? levels.size() : levels.size() - 1;
    }

    /**
     * The call's outcome when it needs no Redis: nothing reserved; its estimated model tokens, and
     * its estimated cost when a level has quotas.
     */
    Reservation decidedReservation() {
      return new Reservation(decided, levels, keys, estimate, 0, 0, 0,
          quotas == null ? 0 : quotas.estimate.spend(), quotas == null ? 0 : quotas.nowMs,
          List.of());
    }
  }

  /**
   * Validates a call exactly as the in-memory store does and answers it when Redis is not needed
   * (a cost no bucket can ever hold).
   *
   * @throws IllegalArgumentException on bad input
   */
  Call plan(List<Budget> levels, List<String> keys, double cost, Composition composition) {
    checkLists(levels, keys);
    if (levels.size() == 1) {
      return plan(levels.get(0), keys.get(0), cost, composition);
    }
    return planAll(levels, keys, cost, 0, false, composition, null);
  }

  /**
   * Validates a call that reserves model tokens exactly as the in-memory store does.
   *
   * @throws IllegalArgumentException on bad input
   */
  Call planReserve(List<Budget> levels, List<String> keys, double cost, long estimatedModelTokens,
      Composition composition) {
    checkLists(levels, keys);
    if (estimatedModelTokens < 0) {
      throw new IllegalArgumentException(
          "estimatedModelTokens must be >= 0, but was " + estimatedModelTokens);
    }
    return planAll(levels, keys, cost, estimatedModelTokens, true, composition, null);
  }

  /**
   * Validates a call that reserves model tokens and charges quotas exactly as the in-memory store
   * does.
   *
   * @throws IllegalArgumentException on bad input
   */
  Call planReserve(List<Budget> levels, List<String> keys, double cost, Consumption estimate,
      Composition composition) {
    checkLists(levels, keys);
    Args.notNull("estimate", estimate);
    if (estimate.requests() != 1) {
      throw new IllegalArgumentException(
          "estimate must count 1 request, but was " + estimate.requests());
    }
    return planAll(levels, keys, cost, estimate.modelTokens(), true, composition, estimate);
  }

  /**
   * Validates a call to an upstream exactly as the in-memory store does: the caller's levels as
   * {@link #planReserve(List, List, double, Consumption, Composition)} does, followed by the
   * upstream's budget with its name as key.
   *
   * @throws IllegalArgumentException on bad input, or a caller's level that is an upstream's
   */
  Call planUpstream(List<Budget> levels, List<String> keys, double cost, Consumption estimate,
      Composition composition, @Nullable Upstream upstream) {
    Args.notNull("upstream", upstream);
    checkLists(levels, keys);
    for (Budget b : levels) {
      if (b != null && Upstream.isUpstream(b)) {
        throw new IllegalArgumentException("levels must not hold an upstream's budget, but held '"
            + b.name() + "'");
      }
    }
    List<Budget> all = new ArrayList<>(levels.size() + 1);
    all.addAll(levels);
    all.add(upstream.budget());
    List<String> allKeys = new ArrayList<>(keys.size() + 1);
    allKeys.addAll(keys);
    allKeys.add(upstream.name());
    Call call = planReserve(all, allKeys, cost, estimate, composition);
    return new Call(call.levels(), call.keys(), call.cost(), call.estimate(), call.reserve(),
        call.composition(), call.decided(), call.quotas(), upstream);
  }

  /**
   * Validates a call to an upstream with a turn in its fair order, as {@link #planUpstream}.
   *
   * @throws IllegalArgumentException on bad input, or a null turn
   */
  Call planTurn(List<Budget> levels, List<String> keys, double cost, Consumption estimate,
      Composition composition, @Nullable Upstream upstream, @Nullable UpstreamTurn turn) {
    Args.notNull("turn", turn);
    return planUpstream(levels, keys, cost, estimate, composition, upstream).withTurn(turn);
  }

  private static void checkLists(@Nullable List<Budget> levels, @Nullable List<String> keys) {
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

  /**
   * Validates a call; {@code quotaEstimate} is what it charges quotas (null for a call that charges
   * none: a level with quotas is then refused).
   */
  private Call planAll(List<Budget> levels, List<String> keys, double cost, long estimate,
      boolean reserve, Composition composition, @Nullable Consumption quotaEstimate) {
    Args.positiveFinite("cost", cost);
    Args.notNull("composition", composition);
    checkLevels(levels, keys);
    if (!reserve) {
      for (Budget b : levels) {
        checkNoSlots(b);
      }
    }
    // what the quotas are charged: only computed when a level has one
    Consumption charged = !QuotaFrame.anyQuota(levels) ? null
        : quotaEstimate != null ? quotaEstimate : new Consumption(1, estimate, 0);
    QuotaFrame quotas = charged == null ? null
        : QuotaFrame.of(levels, charged, wallClock.millis());
    for (Budget b : levels) {
      if (!b.fits(cost) || !b.fitsModelTokens(estimate)
          || charged != null && !b.fitsQuotas(charged)) {
        // refused before any state is read; the frame tells the reservation what was estimated
        return new Call(levels, keys, cost, estimate, reserve, composition, neverFits(b), quotas);
      }
    }
    return new Call(List.copyOf(levels), List.copyOf(keys), cost, estimate, reserve, composition,
        null, quotas);
  }

  /** Checks each level's key and budget, and that names are distinct. */
  private void checkLevels(List<Budget> levels, List<String> keys) {
    Set<String> names = new HashSet<>();
    for (int i = 0; i < levels.size(); i++) {
      Args.notBlank("keys[" + i + "]", keys.get(i));
      Budget b = budget(levels.get(i));
      if (!names.add(b.name())) {
        throw new IllegalArgumentException(
            "levels must have distinct names, but '" + b.name() + "' appears twice");
      }
    }
  }

  /** Validates a single-budget call; see {@link #plan(List, List, double, Composition)}. */
  Call plan(Budget budget, String key, double cost, Composition composition) {
    Args.notBlank("key", key);
    Args.positiveFinite("cost", cost);
    Args.notNull("composition", composition);
    budget(budget);
    checkNoSlots(budget);
    return new Call(List.of(budget), List.of(key), cost, 0, false, composition,
        budget.fits(cost) ? null : neverFits(budget));
  }

  /**
   * Rejects a plain acquire on a level that has quotas or limits concurrency, as the in-memory
   * store does.
   */
  private static void checkNoSlots(Budget b) {
    if (!b.quotas().isEmpty()) {
      throw new IllegalArgumentException("budget '" + b.name() + "' has quotas (" + b.quotas()
          + "): call reserve, whose Reservation settles them");
    }
    ConcurrencyLimit c = b.concurrency();
    if (c != null) {
      throw new IllegalArgumentException("budget '" + b.name() + "' limits concurrency (" + c
          + "): call reserve, whose Reservation releases the slot");
    }
  }

  private static Decision neverFits(Budget b) {
    return Decision.finalDeny(Reason.COST_EXCEEDS_CAPACITY, 0, 0, b.name());
  }

  /** Checks the budget and that its name always comes with the same defaults in this store. */
  Budget budget(@Nullable Budget budget) {
    scripted(budget);
    return budget;
  }

  /**
   * The budget as the scripts see it (its defaults', or a variant's over the same keys); checks
   * it, and that its name always comes with the same defaults in this store.
   */
  ScriptBudget scripted(@Nullable Budget budget) {
    Args.notNull("budget", budget);
    ScriptBudget known = budgets.get(budget.name()); // a known budget: a read, no lock
    if (known == null) {
      ScriptBudget added = new ScriptBudget(budget.defaults(), layout, ticker != null);
      known = budgets.putIfAbsent(budget.name(), added);
      if (known == null) {
        known = added;
      }
    }
    return known.budget == budget ? known : known.view(budget);
  }

  /** Runs a planned call on Redis and waits for its reply (see {@link Replies}). */
  Reservation execute(Call call) {
    if (call.decided() != null) {
      return call.decidedReservation();
    }
    long sent = System.nanoTime();
    Replies replies = master(call.levels(), call.keys()).replies();
    return decode(call, replies.await(submit(call, sent + replies.maxWaitNanos()), sent));
  }

  /**
   * Sends a planned call to Redis: one script call, whatever the number of levels. When the server
   * runs it after {@code deadlineNanos} (local {@code System.nanoTime()}), it charges nothing and
   * the reply is {@link AcquireReply#expired}.
   */
  CompletableFuture<AcquireReply> submit(Call call, long deadlineNanos) {
    if (call.upstream() != null && acrossSlots(call.levels(), call.keys())) {
      return submitAcross(call, deadlineNanos, 0, 0);
    }
    return submitLevels(call, deadlineNanos, null);
  }

  /**
   * Whether a call on these levels (the last one an upstream's) touches two Cluster slots: the
   * upstream's keys and the root's lie in different slots (never off a Cluster).
   */
  boolean acrossSlots(List<Budget> levels, List<String> keys) {
    if (!link.cluster() || !Upstream.isUpstream(levels.get(levels.size() - 1))) {
      return false;
    }
    String[] upstream = scripted(levels.get(levels.size() - 1)).upstreamKeys;
    ScriptBudget root = scripted(levels.get(0));
    String[] rootKeys = new String[root.keyCount];
    root.copyKeys(keys.get(0), keys.get(0), rootKeys, 0);
    return SlotHash.getSlot(upstream[0]) != SlotHash.getSlot(rootKeys[0]);
  }

  /**
   * Sends a call whose upstream lies on another Cluster slot than its root: {@code
   * upstream-acquire.lua} decides and charges the upstream on its slot first, then {@code
   * acquire.lua} decides the caller's levels on the root's (mode 2 after an admission, 3 after a
   * deny); when they deny a call the upstream admitted, its charge is given back ({@code
   * refund.lua}) before the call completes. So no call is admitted that either side denies, and
   * the upstream is never charged for a call it did not admit: two round trips, three when the
   * caller's levels deny a call the upstream admitted. A root's counter that has reached the
   * upstream's id makes the call charge nothing on the root's slot; the upstream's charge is given
   * back and the call tried again with an id past the root's counter (at most {@value
   * #CONFLICT_TRIES} times). A call with a turn is gated and counted by the upstream's order in
   * the first step; the count is undone with the charge (a waiting call goes back in its place).
   */
  private CompletableFuture<AcquireReply> submitAcross(Call call, long deadlineNanos, long floor,
      int tries) {
    int n = call.callerLevels();
    return upstreamAcquire(call, floor).thenCompose(charge -> {
      if (!charge.admitted()) {
        return submitLevels(call, deadlineNanos, new double[] {3, charge.waitMs()})
            .thenApply(reply -> charge.joined(reply, n));
      }
      return submitLevels(call, deadlineNanos, new double[] {2, charge.id()})
          .thenCompose(reply -> {
            if (reply.conflict) {
              long counter = reply.values[AcquireReply.NUMBERED_ID];
              return giveBack(call, charge, true).thenCompose(done -> tries + 1 < CONFLICT_TRIES
                  ? submitAcross(call, deadlineNanos, counter + 1, tries + 1)
                  : CompletableFuture.failedFuture(new RedisException("the root's reservation "
                      + "counter passed the upstream's " + CONFLICT_TRIES + " times")));
            }
            if (reply.expired || reply.values[0] != 1) {
              return giveBack(call, charge, true).thenApply(done -> {
                AcquireReply joined = charge.joined(reply, n);
                joined.upstream = null; // given back: a late reply's refund leaves it
                return joined;
              });
            }
            return CompletableFuture.completedFuture(charge.joined(reply, n));
          });
    });
  }

  /** Sends one {@code upstream-acquire.lua} call for the call's upstream (see its file). */
  private CompletableFuture<UpstreamCharge> upstreamAcquire(Call call, long floor) {
    ScriptBudget up = scripted(call.levels().get(call.levels().size() - 1));
    String[] all = up.upstreamKeys;
    String[] levelKeys = up.levelKeys(all);
    boolean numbered = up.budget.modelTokens() != null || up.budget.concurrency() != null;
    UpstreamTurn turn = call.turn();
    String[] keys = new String[levelKeys.length + (numbered ? 2 : 1) + (turn != null ? 1 : 0)];
    System.arraycopy(levelKeys, 0, keys, 0, levelKeys.length);
    keys[levelKeys.length] = all[3];
    if (numbered) {
      keys[levelKeys.length + 1] = all[4];
    }
    double[] numbers = timeNumbers(turn == null ? 7 : 12); // ARGV[1] (see upstream-acquire.lua)
    numbers[3] = call.estimate();
    numbers[4] = RESERVATION_ID_BASE;
    numbers[5] = slotLeaseUnits;
    numbers[6] = floor;
    byte[][] args = turn == null ? new byte[][] {up.levelArg} : new byte[3][];
    if (turn != null) { // upstream-acquire.lua's ORDER
      keys[keys.length - 1] = layout.order(call.upstream().name());
      numbers[7] = 1;
      numbers[8] = turn.weight();
      numbers[9] = turn.priority();
      numbers[10] = turn.estimate();
      numbers[11] = RedisUpstreamOrder.POLL_INTERVAL.toMillis();
      args[0] = up.levelArg;
      turnArgs(turn, args, 1);
    }
    return watched(keys[0], link.async().thenCompose(redis ->
        UPSTREAM_ACQUIRE.submit(redis, LuaScript.list(), keys, numbers, args, args.length)))
        .thenApply(UpstreamCharge::of);
  }

  /**
   * Gives back on the upstream's slot what {@code upstream-acquire.lua} charged for a call
   * (nothing when it denied): its window's admission, model tokens and slot, and the report's
   * counts while that report holds ({@code refund.lua} on the upstream's level alone).
   */
  CompletableFuture<Boolean> giveBack(Call call, UpstreamCharge charge) {
    return giveBack(call, charge, false);
  }

  /**
   * Gives back what {@code upstream-acquire.lua} charged as {@link #giveBack(Call,
   * UpstreamCharge)} does, and, with {@code order}, undoes its count in the upstream's order too
   * (refund.lua's ORDER): a waiting call the caller's levels denied goes back first among its
   * tenant's calls.
   */
  CompletableFuture<Boolean> giveBack(Call call, UpstreamCharge charge, boolean order) {
    if (!charge.admitted()) {
      return CompletableFuture.completedFuture(false);
    }
    ScriptBudget up = scripted(call.levels().get(call.levels().size() - 1));
    String[] all = up.upstreamKeys;
    String[] levelKeys = up.levelKeys(all);
    UpstreamTurn turn = call.turn();
    double[] undo = charge.orderUndo();
    boolean undone = order && turn != null && undo.length > 0 && undo[0] > 0;
    String[] keys = new String[levelKeys.length + (undone ? 2 : 1)];
    System.arraycopy(levelKeys, 0, keys, 0, levelKeys.length);
    keys[levelKeys.length] = all[3];
    byte[][] args = undone ? new byte[4][] : new byte[][] {up.levelArg};
    if (undone) {
      keys[keys.length - 1] = layout.order(call.upstream().name());
      double[] o = new double[10];
      o[0] = keys.length;
      System.arraycopy(undo, 0, o, 1, 6);
      o[7] = turn.weight();
      o[8] = turn.priority();
      o[9] = turn.estimate();
      args[0] = up.levelArg;
      args[1] = ScriptArgs.bulkOfDoubles(o);
      turnArgs(turn, args, 2);
    }
    double[] numbers = timeNumbers(15); // ARGV[1] (see refund.lua)
    numbers[3] = 1;
    numbers[4] = charge.ranAt();
    numbers[5] = call.cost();
    numbers[6] = charge.id() == 0 ? 0 : RESERVATION_ID_BASE + charge.id();
    numbers[7] = up.budget.window() != null ? 1 : 0;
    numbers[8] = 0;
    numbers[9] = 0;
    numbers[10] = levelKeys.length + 1;
    numbers[11] = charge.counted();
    numbers[12] = charge.requestsResetAt();
    numbers[13] = charge.tokensResetAt();
    numbers[14] = call.estimate();
    return watched(keys[0], link.async().thenCompose(redis ->
        REFUND.submit(redis, LuaScript.list(), keys, numbers, args, args.length)))
        .thenApply(ignored -> true);
  }

  /**
   * Sends a planned call as one {@code acquire.lua} call; {@code outside} null, or, on a Cluster
   * where the upstream's slot is not the root's, what {@code upstream-acquire.lua} decided there
   * ({@code {mode, value}}, acquire.lua's UPSTREAM modes 2 and 3): the reply then has the caller's
   * levels' figures only.
   */
  private CompletableFuture<AcquireReply> submitLevels(Call call, long deadlineNanos,
      double @Nullable [] outside) {
    List<Budget> levels = call.levels();
    int n = call.callerLevels();
    ScriptBudget[] scripted = scripted(levels, n);
    // ARGV[1] (see acquire.lua); the root's reservation counter only when the call numbers one
    double[] numbers = timeNumbers(13 + 2 * n + (call.upstream() == null ? 0 : UPSTREAM_NUMBERS));
    numbers[3] = call.cost();
    numbers[4] = call.composition() == Composition.SEQUENTIAL ? 1 : 0;
    numbers[5] = n;
    numbers[6] = call.estimate();
    numbers[7] = call.reserve() ? RESERVATION_ID_BASE : 0;
    numbers[8] = serverClock == null ? 0 : serverClock.notAfter(deadlineNanos);
    numbers[9] = slotLeaseUnits;
    int keyCount = keyCount(scripted);
    QuotaFrame quotas = call.quotas();
    if (quotas != null) {
      return submitWithQuotas(call, quotas, scripted, numbers, keyCount, outside);
    }
    String[] levelKeys = new String[keyCount];
    boolean turn = call.turn() != null && outside == null;
    byte[][] levelArgs = new byte[turn ? n + 3 : n][];
    String counter = levelKeys(call.keys(), scripted, levelKeys, levelArgs);
    if (turn) {
      levelArgs[n] = EMPTY_ARG;
      turnArgs(call.turn(), levelArgs, n + 1);
    }
    String[] monitorKeys = monitorKeys(call, scripted, levelKeys, numbers, keyCount + 1);
    String[] upstreamKeys =
        upstreamKeys(call, numbers, 13 + 2 * n, keyCount + monitorKeys.length + 1, outside);
    String[] keys = new String[keyCount + monitorKeys.length + upstreamKeys.length
        + (call.reserve() ? 1 : 0)];
    System.arraycopy(levelKeys, 0, keys, 0, keyCount);
    System.arraycopy(monitorKeys, 0, keys, keyCount, monitorKeys.length);
    System.arraycopy(upstreamKeys, 0, keys, keyCount + monitorKeys.length, upstreamKeys.length);
    if (call.reserve()) {
      keys[keys.length - 1] = counter;
    }
    boolean figures = figures(call, numbers, n);
    int replied = outside == null ? levels.size() : n;
    return watched(keys[0], link.async().thenCompose(redis -> ACQUIRE.submit(redis,
        () -> new AcquireReply(false, figures ? replied : 0, figures), keys, numbers, levelArgs,
        levelArgs.length)));
  }

  /** Puts a turn's tenant (hashed) and waiting call's id ('' for none) at {@code args[at]}. */
  private void turnArgs(UpstreamTurn turn, byte[][] args, int at) {
    args[at] = ScriptArgs.bulkOfString(layout.tenant(turn.tenant()));
    args[at + 1] = ScriptArgs.bulkOfString(turn.waiter() == null ? "" : turn.waiter());
  }

  /**
   * The keys of a call's upstream for acquire.lua (UPSTREAM there): its state, its model-token
   * window and slots when it limits them, its report, and its reservation counter when it limits
   * model tokens or concurrency; none without an upstream. Sets the {@value #UPSTREAM_NUMBERS}
   * numbers from {@code numbers[at]}: the mode (1, decided in the script), the upstream's level
   * values, and the index in KEYS of each of its keys ({@code firstKey} the first; 0 for a key
   * not passed); or, with {@code outside}, its mode and value only, and no key.
   */
  private String[] upstreamKeys(Call call, double[] numbers, int at, int firstKey,
      double @Nullable [] outside) {
    if (call.upstream() == null) {
      return new String[0];
    }
    if (outside != null) {
      numbers[at] = outside[0];
      numbers[at + 1] = outside[1];
      return new String[0];
    }
    ScriptBudget up = scripted(call.levels().get(call.levels().size() - 1));
    String[] all = up.upstreamKeys;
    boolean tokens = up.budget.modelTokens() != null;
    boolean slots = up.budget.concurrency() != null;
    UpstreamTurn turn = call.turn();
    String[] keys = new String[2 + (tokens ? 1 : 0) + (slots ? 1 : 0)
        + (tokens || slots ? 1 : 0) + (turn != null ? 1 : 0)];
    numbers[at] = 1;
    System.arraycopy(up.values, 0, numbers, at + 1, up.values.length);
    int k = 0;
    keys[k++] = all[0];
    numbers[at + 10] = firstKey;
    if (tokens) {
      keys[k++] = all[1];
      numbers[at + 11] = firstKey + k - 1;
    }
    if (slots) {
      keys[k++] = all[2];
      numbers[at + 12] = firstKey + k - 1;
    }
    keys[k++] = all[3];
    numbers[at + 13] = firstKey + k - 1;
    if (tokens || slots) {
      keys[k++] = all[4];
      numbers[at + 14] = firstKey + k - 1;
    }
    if (turn != null) { // acquire.lua's ORDER
      keys[k++] = layout.order(call.upstream().name());
      numbers[at + 15] = 1;
      numbers[at + 16] = firstKey + k - 1;
      numbers[at + 17] = turn.weight();
      numbers[at + 18] = turn.priority();
      numbers[at + 19] = turn.estimate();
      numbers[at + 20] = RedisUpstreamOrder.POLL_INTERVAL.toMillis();
    }
    return keys;
  }

  /**
   * Sends a call on levels with quotas: the levels' keys, then every quota's counter, then the
   * root's reservation counter; the quota argument after the levels'.
   */
  private CompletableFuture<AcquireReply> submitWithQuotas(Call call, QuotaFrame quotas,
      ScriptBudget[] scripted, double[] numbers, int keyCount, double @Nullable [] outside) {
    int n = scripted.length;
    String[] levelKeys = new String[keyCount];
    boolean turn = call.turn() != null && outside == null;
    byte[][] levelArgs = new byte[turn ? n + 3 : n + 1][];
    String counter = levelKeys(call.keys(), scripted, levelKeys, levelArgs);
    if (turn) {
      turnArgs(call.turn(), levelArgs, n + 1);
    }
    String[] quotaKeys = quotas.keys(stateKeys(scripted, levelKeys));
    String[] monitorKeys =
        monitorKeys(call, scripted, levelKeys, numbers, keyCount + quotaKeys.length + 1);
    int before = keyCount + quotaKeys.length + monitorKeys.length;
    String[] upstreamKeys = upstreamKeys(call, numbers, 13 + 2 * n, before + 1, outside);
    String[] keys = new String[before + upstreamKeys.length + (call.reserve() ? 1 : 0)];
    System.arraycopy(levelKeys, 0, keys, 0, keyCount);
    System.arraycopy(quotaKeys, 0, keys, keyCount, quotaKeys.length);
    System.arraycopy(monitorKeys, 0, keys, keyCount + quotaKeys.length, monitorKeys.length);
    System.arraycopy(upstreamKeys, 0, keys, before, upstreamKeys.length);
    if (call.reserve()) {
      keys[keys.length - 1] = counter;
    }
    levelArgs[n] = quotas.acquireArg(keyCount + 1);
    boolean figures = figures(call, numbers, n);
    int replied = outside == null ? call.levels().size() : n;
    return watched(keys[0], link.async().thenCompose(redis -> ACQUIRE.submit(redis,
        () -> new AcquireReply(true, figures ? replied : 0, figures), keys, numbers, levelArgs,
        levelArgs.length)));
  }

  /**
   * Whether the reply ends with the levels' figures: a reservation reports them, a plain decision
   * does not ask for them. Sets the flag of {@code numbers} (acquire.lua, after the monitoring
   * numbers of {@code n} levels) accordingly.
   */
  private static boolean figures(Call call, double[] numbers, int n) {
    boolean figures = call.reserve();
    numbers[12 + 2 * n] = figures ? 1 : 0;
    return figures;
  }

  /**
   * The keys of the monitoring structures a call keeps ({@link Monitoring}, lib.lua): per level its
   * busiest set and its key estimate, then, when the call charges quotas, per quota of the level
   * its spenders set. Sets {@code numbers[10]} (their first index in KEYS, {@code firstKey}), {@code
   * numbers[11]} (the members a set keeps), from {@code numbers[12]} each level's time to live, and
   * from {@code numbers[12 + n]} each level's period modulo 2<sup>32</sup> (the mark of lib.lua).
   */
  private String[] monitorKeys(Call call, ScriptBudget[] scripted, String[] levelKeys,
      double[] numbers, int firstKey) {
    QuotaFrame quotas = call.quotas();
    int bucket = monitoring.bucket(levelKeys[0]);
    long nowMs = monitorMillis();
    String[] keys = new String[2 * scripted.length + (quotas == null ? 0 : quotas.count)];
    int k = 0;
    for (int i = 0; i < scripted.length; i++) {
      ScriptBudget b = scripted[i];
      long periodMs = b.monitorPeriodMs;
      long period = Monitoring.period(periodMs, nowMs);
      String name = b.budget.name();
      keys[k++] = monitoring.busiest(bucket, name, periodMs, period);
      keys[k++] = monitoring.seen(bucket, name, periodMs, period);
      numbers[12 + i] = Monitoring.ttlMs(periodMs, (long) numbers[2]);
      numbers[12 + scripted.length + i] = Math.floorMod(period, 1L << 32);
      if (quotas != null) {
        List<QuotaLimit> qs = b.budget.quotas();
        for (int j = 0; j < qs.size(); j++) {
          keys[k++] = monitoring.spenders(bucket, name, qs.get(j).stateId(), quotas.start(i, j));
        }
      }
    }
    numbers[10] = firstKey;
    numbers[11] = monitoring.cap;
    return keys;
  }

  /** The clock of the monitoring periods: the ticker's, else this process's wall clock. */
  long monitorMillis() {
    Ticker t = ticker;
    return t == null ? wallClock.millis() : Math.floorDiv(t.read(), 1_000_000L);
  }

  /** Each level's state key, from the keys {@link #levelKeys} put in order. */
  private static String[] stateKeys(ScriptBudget[] scripted, String[] levelKeys) {
    String[] state = new String[scripted.length];
    int k = 0;
    for (int i = 0; i < scripted.length; i++) {
      state[i] = levelKeys[k];
      k += scripted[i].keyCount;
    }
    return state;
  }

  /**
   * The outcome of a call from its reply (not {@link AcquireReply#expired}). A call to an upstream
   * that one of the caller's levels denied is the reservation the call without the upstream
   * gives: the caller's levels, keys and figures only.
   */
  static Reservation decode(Call call, AcquireReply r) {
    List<Budget> levels = call.levels();
    List<String> keys = call.keys();
    long[] v = r.values;
    String level = levels.get((int) v[2] - 1).name();
    Decision d = new Decision(v[0] == 1, v[3], v[4], v[5], r.reason, v[6] == 1, level);
    QuotaFrame quotas = call.quotas();
    List<LevelRemaining> components = components(levels, r.components);
    if (call.upstream() != null && !d.allowed() && r.reason != Reason.UPSTREAM_LIMIT) {
      int n = call.callerLevels();
      levels = levels.subList(0, n);
      keys = keys.subList(0, n);
      components = components.isEmpty() ? components : components.subList(0, n);
    }
    if (quotas == null || r.quotas == null) {
      return new Reservation(d, levels, keys, call.estimate(), v[7], v[8], v[9], 0, 0,
          List.of(), components);
    }
    return new Reservation(d, levels, keys, call.estimate(), v[7], v[8], v[9],
        quotas.estimate.spend(), quotas.nowMs, quotas.statuses(r.quotas), components);
  }

  /** Each level's figures from the reply's ({@link AcquireReply#components}); empty if none. */
  private static List<LevelRemaining> components(List<Budget> levels, long[] figures) {
    if (figures.length == 0) {
      return List.of();
    }
    if (levels.size() == 1) {
      return List.of(level(levels, figures, 0));
    }
    LevelRemaining[] each = new LevelRemaining[levels.size()];
    for (int i = 0; i < each.length; i++) {
      each[i] = level(levels, figures, i);
    }
    return List.of(each);
  }

  /** Level {@code i}'s figures, from its {@link AcquireReply#FIGURES} numbers in the reply's. */
  private static LevelRemaining level(List<Budget> levels, long[] figures, int i) {
    int f = i * AcquireReply.FIGURES;
    return new LevelRemaining(levels.get(i).name(), figures[f], figures[f + 1], figures[f + 2],
        figures[f + 3], figures[f + 4], figures[f + 5], figures[f + 6]);
  }

  /**
   * Undoes on Redis what a call charged, from its reply: for a call whose caller stopped waiting
   * and was answered by the failure policy. Completes with {@code false} when it charged nothing.
   */
  CompletableFuture<Boolean> refund(Call call, AcquireReply r) {
    if (call.upstream() != null && acrossSlots(call.levels(), call.keys())) {
      // the caller's levels on the root's slot, the upstream's charge on its own
      int n = call.callerLevels();
      Call levelsOnly = new Call(call.levels().subList(0, n), call.keys().subList(0, n),
          call.cost(), call.estimate(), call.reserve(), call.composition(), null, call.quotas());
      UpstreamCharge charge = r.upstream;
      CompletableFuture<Boolean> back = charge == null || r.expired || r.conflict
          ? CompletableFuture.completedFuture(false) : giveBack(call, charge);
      return refund(levelsOnly, r).thenCombine(back, (a, b) -> a || b);
    }
    List<Budget> levels = call.levels();
    int n = levels.size();
    long[] v = r.values;
    boolean allowed = v[0] == 1;
    boolean sequential = call.composition() == Composition.SEQUENTIAL;
    if (r.expired || (!allowed && !sequential) || r.reason == Reason.UPSTREAM_LIMIT) {
      return CompletableFuture.completedFuture(false); // an upstream deny charged nothing
    }
    // what acquire.lua charged: every level of an admitted call; in sequential composition the
    // levels before the denying one, and at the denying one the window unless the window or the
    // slots denied (slots are checked first, and their deny charges nothing there), and the bucket
    // too when model tokens denied
    int denied = allowed ? n + 1 : (int) v[2];
    // the quotas charged: every level's of an admitted call, else those of the levels before the
    // denying one (sequential)
    QuotaFrame quotas = call.quotas();
    List<String> quotaKeys = new ArrayList<>();
    List<Long> quotaAmounts = new ArrayList<>();
    ScriptBudget[] scripted = scripted(levels);
    String[] keys = new String[keyCount(scripted)];
    byte[][] levelArgs = new byte[n][];
    levelKeys(call.keys(), scripted, keys, levelArgs);
    if (quotas != null) {
      String[] all = quotas.keys(stateKeys(scripted, keys));
      int q = 0;
      for (int i = 0; i < n; i++) {
        for (QuotaLimit quota : levels.get(i).quotas()) {
          long amount = quota.unit().amount(quotas.estimate);
          if (i + 1 < denied && amount > 0) {
            quotaKeys.add(all[q]);
            quotaAmounts.add(amount);
          }
          q++;
        }
      }
    }
    int quotaCount = quotaKeys.size();
    double[] numbers = timeNumbers(8 + 2 * n + 2 * quotaCount); // ARGV[1] (see refund.lua)
    numbers[3] = n;
    numbers[4] = v[AcquireReply.NOW];
    numbers[5] = call.cost();
    numbers[6] = v[AcquireReply.NUMBERED_ID];
    boolean any = v[AcquireReply.NUMBERED_ID] != 0;
    for (int i = 0; i < n; i++) {
      boolean window = i + 1 < denied || (i + 1 == denied && r.reason != Reason.RPM_LIMIT
          && r.reason != Reason.CONCURRENCY_LIMIT);
      boolean bucket = i + 1 < denied || (i + 1 == denied
          && (r.reason == Reason.TPM_LIMIT || r.reason == Reason.QUOTA_EXCEEDED));
      numbers[7 + 2 * i] = window ? 1 : 0;
      numbers[8 + 2 * i] = bucket ? 1 : 0;
      any |= window || bucket;
    }
    numbers[7 + 2 * n] = quotaCount;
    String[] all = keys;
    if (quotaCount > 0) {
      any = true;
      all = new String[keys.length + quotaCount];
      System.arraycopy(keys, 0, all, 0, keys.length);
      for (int j = 0; j < quotaCount; j++) {
        all[keys.length + j] = quotaKeys.get(j);
        numbers[8 + 2 * n + 2 * j] = keys.length + j + 1;
        numbers[9 + 2 * n + 2 * j] = quotaAmounts.get(j);
      }
    }
    if (!any) {
      return CompletableFuture.completedFuture(false);
    }
    String[] sent = all;
    return watched(sent[0], link.async().thenCompose(redis ->
        REFUND.submit(redis, LuaScript.list(), sent, numbers, levelArgs, n)))
        .thenApply(ignored -> true);
  }

  /**
   * Marks the instance {@code id} live for {@code ttlMs} and completes with the number of live
   * instances sharing this store's key prefix; the reply's server time corrects the estimate of
   * the server's clock.
   */
  CompletableFuture<Long> heartbeat(long id, long ttlMs) {
    double[] numbers = timeNumbers(5); // ARGV[1] (see heartbeat.lua)
    numbers[3] = id;
    numbers[4] = ttlMs;
    String[] keys = {layout.instances()};
    return watched(keys[0], link.async().thenCompose(redis ->
        HEARTBEAT.submit(redis, LuaScript.list(), keys, numbers, new byte[0][], 0)))
        .thenApply(reply -> {
          if (serverClock != null) {
            serverClock.sample(Long.parseLong(reply.get(1).toString()), System.nanoTime());
          }
          return (Long) reply.get(0);
        });
  }

  /** The key of the live-instance set, which the heartbeats update. */
  String instancesKey() {
    return layout.instances();
  }

  /**
   * Sends a {@code PING} to {@code master}: over the connection on a standalone server (or a
   * Sentinel's master), to that master's node on a Cluster whose topology is known; completes with
   * the reply.
   */
  CompletableFuture<String> ping(RedisMasters.Master master) {
    CompletableFuture<String> sent = master.id().isEmpty()
        ? link.async().thenCompose(redis -> redis.ping().toCompletableFuture())
        : link.ping(master.id());
    return watched(master, sent);
  }

  /**
   * Notes every reply's arrival on the silence clock of the master that serves {@code routeKey},
   * and the server time a script reply carries.
   */
  private <T> CompletableFuture<T> watched(String routeKey, CompletableFuture<T> call) {
    return watched(masters.forKey(routeKey), call);
  }

  private <T> CompletableFuture<T> watched(RedisMasters.Master master, CompletableFuture<T> call) {
    Replies replies = master.replies();
    return call.whenComplete((reply, failure) -> {
      replies.arrived(failure);
      if (reply instanceof AcquireReply a && serverClock != null) {
        serverClock.sample(a.values[AcquireReply.NOW], System.nanoTime());
      }
    });
  }

  /** The clock of quota periods. */
  InstantSource wallClock() {
    return wallClock;
  }

  /**
   * The replies of a standalone server (or a Sentinel's master), and how long a caller waits for
   * one; on a Cluster, those of the calls sent before the topology is known (the waits are every
   * master's).
   */
  Replies replies() {
    return masters.single().replies();
  }

  /** The health of each master. */
  RedisMasters masters() {
    return masters;
  }

  /**
   * The master that serves the keys of a call on {@code levels} under {@code keys}: every key of
   * one script call carries the root key's hash tag.
   */
  RedisMasters.Master master(List<Budget> levels, List<String> keys) {
    if (!masters.cluster()) {
      return masters.single();
    }
    ScriptBudget root = scripted(levels.get(0));
    String[] rootKeys = new String[root.keyCount];
    root.copyKeys(keys.get(0), keys.get(0), rootKeys, 0);
    return masters.forKey(rootKeys[0]);
  }

  private ScriptBudget[] scripted(List<Budget> levels) {
    return scripted(levels, levels.size());
  }

  /** The first {@code n} levels as the scripts see them. */
  private ScriptBudget[] scripted(List<Budget> levels, int n) {
    ScriptBudget[] scripted = new ScriptBudget[n];
    for (int i = 0; i < scripted.length; i++) {
      scripted[i] = scripted(levels.get(i));
    }
    return scripted;
  }

  /** The number of Redis keys the levels pass to a script (see {@link ScriptBudget#keyCount}). */
  private static int keyCount(ScriptBudget[] levels) {
    int n = 0;
    for (ScriptBudget b : levels) {
      n += b.keyCount;
    }
    return n;
  }

  /**
   * Puts the keys of every level (limiter keys in clear, the first one the root) into {@code keys}
   * from 0, and each level's script argument into {@code levelArgs}; returns the root's
   * reservation counter.
   */
  private static String levelKeys(
      List<String> levelKeys, ScriptBudget[] levels, String[] keys, byte[][] levelArgs) {
    String root = levelKeys.get(0);
    String counter = null;
    int k = 0;
    for (int i = 0; i < levels.length; i++) {
      ScriptBudget b = levels[i];
      String c = b.copyKeys(root, levelKeys.get(i), keys, k);
      k += b.keyCount;
      if (i == 0) {
        counter = c;
      }
      levelArgs[i] = b.levelArg;
    }
    return counter;
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      long estimatedModelTokens, Composition composition) {
    return execute(planReserve(levels, keys, cost, estimatedModelTokens, composition));
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition) {
    return execute(planReserve(levels, keys, cost, estimate, composition));
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition) {
    return submitPlanned(planReserve(levels, keys, cost, estimate, composition));
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream) {
    return execute(planUpstream(levels, keys, cost, estimate, composition, upstream));
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream) {
    return submitPlanned(planUpstream(levels, keys, cost, estimate, composition, upstream));
  }

  /** Sends a planned call without waiting (unless it needs no Redis) and decodes its reply. */
  private CompletionStage<Reservation> submitPlanned(Call call) {
    if (call.decided() != null) {
      return CompletableFuture.completedFuture(call.decidedReservation());
    }
    return submit(call, System.nanoTime() + replies().maxWaitNanos())
        .thenApply(reply -> decode(call, reply));
  }

  /**
   * Validates a provider's report; returns whether Redis has anything to do: always, as even a
   * report that says nothing tells that an answer came (it ends a probe, {@link Upstream#PROBE}).
   *
   * @throws IllegalArgumentException if an argument is null
   */
  boolean planReport(@Nullable Upstream upstream, @Nullable ProviderReport report) {
    Args.notNull("upstream", upstream);
    Args.notNull("report", report);
    scripted(upstream.budget());
    return true;
  }

  @Override
  public void report(Upstream upstream, ProviderReport report) {
    if (planReport(upstream, report)) {
      long sent = System.nanoTime();
      upstreamMaster(upstream).replies().await(submitReport(upstream, report), sent);
    }
  }

  @Override
  public CompletionStage<Void> reportAsync(Upstream upstream, ProviderReport report) {
    if (!planReport(upstream, report)) {
      return CompletableFuture.completedFuture(null);
    }
    return submitReport(upstream, report).thenApply(ignored -> null);
  }

  /**
   * Sends a validated report to Redis: one {@code report.lua} call on the upstream's report key,
   * on the store's clock. A reported limit is sent when it is below the configured one, else as
   * -1 (which clears a lower one held); a limit the upstream does not configure is not sent.
   */
  CompletableFuture<List<Object>> submitReport(Upstream upstream, ProviderReport report) {
    double[] numbers = timeNumbers(10); // ARGV[1] (see report.lua)
    numbers[3] = lowerLimit(report.limitRequests(),
        upstream.requests() == null ? null : (long) upstream.requests().limit());
    numbers[4] = lowerLimit(report.limitTokens(),
        upstream.modelTokens() == null ? null : upstream.modelTokens().limit());
    boolean requests = report.remainingRequests() != null && report.resetRequests() != null;
    numbers[5] = requests ? report.remainingRequests() : Double.NaN;
    numbers[6] = requests ? units(report.resetRequests()) : Double.NaN;
    boolean tokens = report.remainingTokens() != null && report.resetTokens() != null;
    numbers[7] = tokens ? report.remainingTokens() : Double.NaN;
    numbers[8] = tokens ? units(report.resetTokens()) : Double.NaN;
    numbers[9] = report.retryAfter() == null ? Double.NaN : units(report.retryAfter());
    String[] keys = {layout.upstream(upstream.name())[3]};
    return watched(keys[0], link.async().thenCompose(redis ->
        REPORT.submit(redis, LuaScript.list(), keys, numbers, new byte[0][], 0)));
  }

  /**
   * A reported limit as report.lua takes it: NaN when absent or not configured, -1 when not
   * lower.
   */
  private static double lowerLimit(@Nullable Long reported, @Nullable Long configured) {
    if (reported == null || configured == null) {
      return Double.NaN;
    }
    return reported < configured ? reported : -1;
  }

  /** A duration in the scripts' time units. */
  double units(Duration d) {
    return ticker == null ? d.toNanos() / 1000.0 : d.toNanos();
  }

  @Override
  public UpstreamStatus upstreamStatus(Upstream upstream) {
    Args.notNull("upstream", upstream);
    scripted(upstream.budget());
    long sent = System.nanoTime();
    return upstreamMaster(upstream).replies().await(submitUpstreamStatus(upstream), sent);
  }

  /** Sends one {@code upstream-status.lua} call and completes with the status it read. */
  CompletableFuture<UpstreamStatus> submitUpstreamStatus(Upstream upstream) {
    ScriptBudget up = scripted(upstream.budget());
    String[] all = up.upstreamKeys;
    String[] levelKeys = up.levelKeys(all);
    String[] keys = new String[levelKeys.length + 1];
    System.arraycopy(levelKeys, 0, keys, 0, levelKeys.length);
    keys[levelKeys.length] = all[3];
    double[] numbers = timeNumbers(3); // ARGV[1] (see upstream-status.lua)
    byte[][] args = {up.levelArg};
    return watched(keys[0], link.async().thenCompose(redis ->
        UPSTREAM_STATUS.submit(redis, LuaScript.list(), keys, numbers, args, 1)))
        .thenApply(reply -> new UpstreamStatus(upstream.name(), present(reply.get(0)),
            present(reply.get(1)), present(reply.get(2)), present(reply.get(3)),
            (Long) reply.get(4), present(reply.get(5)), present(reply.get(6)),
            (Long) reply.get(7)));
  }

  /** A figure of upstream-status.lua: null for -1 (not limited, or no report holds). */
  private static @Nullable Long present(Object figure) {
    long v = (Long) figure;
    return v < 0 ? null : v;
  }

  /** The master that serves an upstream's keys (its own hash tag). */
  RedisMasters.Master upstreamMaster(Upstream upstream) {
    if (!masters.cluster()) {
      return masters.single();
    }
    return masters.forKey(layout.upstream(upstream.name())[0]);
  }

  /**
   * Validates a reconciliation; returns whether Redis has anything to do.
   *
   * @throws IllegalArgumentException on bad input
   */
  boolean planReconcile(@Nullable Reservation reservation, long actualModelTokens) {
    Args.notNull("reservation", reservation);
    if (actualModelTokens < 0) {
      throw new IllegalArgumentException(
          "actualModelTokens must be >= 0, but was " + actualModelTokens);
    }
    return planReconcile(reservation,
        new Consumption(1, actualModelTokens, reservation.estimatedSpend()));
  }

  /**
   * Validates a settlement; returns whether Redis has anything to do (model tokens or quotas).
   *
   * @throws IllegalArgumentException on bad input
   */
  boolean planReconcile(@Nullable Reservation reservation, @Nullable Consumption actual) {
    Args.notNull("reservation", reservation);
    Args.notNull("actual", actual);
    if (!reservation.reserved() && !reservation.chargedQuotas()) {
      return false;
    }
    checkMadeHere(reservation);
    return true;
  }

  /**
   * Checks the levels of a reservation this store made; one the local fallback made holds its
   * share's budgets (the same names, scaled limits), which its own store checks.
   */
  private void checkMadeHere(Reservation reservation) {
    if (fromRedis(reservation)) {
      checkLevels(reservation.levels(), reservation.keys());
    }
  }

  @Override
  public void reconcile(Reservation reservation, long actualModelTokens) {
    Args.notNull("reservation", reservation);
    Args.notNegative("actualModelTokens", actualModelTokens);
    reconcile(reservation, new Consumption(1, actualModelTokens, reservation.estimatedSpend()));
  }

  @Override
  public void reconcile(Reservation reservation, Consumption actual) {
    if (planReconcile(reservation, actual)) {
      long sent = System.nanoTime();
      master(reservation.levels(), reservation.keys()).replies()
          .await(submitReconcile(reservation, actual), sent);
    }
  }

  @Override
  public CompletionStage<Void> reconcileAsync(Reservation reservation, Consumption actual) {
    if (!planReconcile(reservation, actual)) {
      return CompletableFuture.completedFuture(null);
    }
    return submitReconcile(reservation, actual).thenApply(ignored -> null);
  }

  /**
   * Sends a validated settlement to Redis: one script call that settles the model tokens (when the
   * reservation holds some) and adds, at every quota it charged, the actual amount less the
   * estimate to the counter of the period that holds {@link Reservation#quotaAtMs()}, and takes
   * the estimate from the counter's estimates in flight.
   */
  CompletableFuture<List<Object>> submitReconcile(Reservation reservation, Consumption actual) {
    if (acrossSlots(reservation.levels(), reservation.keys())) {
      return eachSlot(reservation, part -> part.reserved() || part.chargedQuotas(),
          part -> submitReconcile(part, actual));
    }
    List<Budget> levels = reservation.levels();
    ScriptBudget[] scripted = scripted(levels);
    String[] keys = new String[keyCount(scripted)];
    byte[][] levelArgs = new byte[scripted.length][];
    levelKeys(reservation.keys(), scripted, keys, levelArgs);
    boolean tokens = reservation.reserved();
    List<String> quotaKeys = new ArrayList<>();
    List<String> spenderKeys = new ArrayList<>();
    List<long[]> quotaDeltas = new ArrayList<>(); // {delta, estimate in flight, time to live}
    if (reservation.chargedQuotas()) {
      long nowMs = wallClock.millis();
      Consumption estimate = reservation.estimated();
      String[] state = stateKeys(scripted, keys);
      for (int i = 0; i < levels.size(); i++) {
        for (QuotaLimit q : levels.get(i).quotas()) {
          long delta = q.unit().amount(actual) - q.unit().amount(estimate);
          long inFlight = QuotaFrame.inFlight(q, estimate);
          long[] period = QuotaFrame.period(q, reservation.quotaAtMs());
          long ttl = period[1] + QuotaFrame.RETENTION_MS - nowMs;
          if ((delta != 0 || inFlight > 0) && ttl > 0) { // else expired: nothing to settle
            quotaKeys.add(RedisKeys.quota(state[i], q.stateId(), period[0]));
            spenderKeys.add(monitoring.spenders(monitoring.bucket(state[i]),
                levels.get(i).name(), q.stateId(), period[0]));
            quotaDeltas.add(new long[] {delta, inFlight, ttl});
          }
        }
      }
    }
    int levelKeyCount = tokens ? keys.length : 0;
    int quotaCount = quotaKeys.size();
    double[] numbers = timeNumbers(9 + 4 * quotaCount); // ARGV[1] (see reconcile.lua)
    numbers[3] = tokens ? levels.size() : 0;
    numbers[4] = reservation.id();
    numbers[5] = reservation.estimate();
    numbers[6] = actual.modelTokens();
    numbers[7] = quotaCount;
    String[] all = new String[levelKeyCount + 2 * quotaCount];
    System.arraycopy(keys, 0, all, 0, levelKeyCount);
    numbers[8 + 4 * quotaCount] = 1; // each counter's spenders set follows the counters
    for (int j = 0; j < quotaCount; j++) {
      all[levelKeyCount + j] = quotaKeys.get(j);
      all[levelKeyCount + quotaCount + j] = spenderKeys.get(j);
      numbers[8 + 4 * j] = levelKeyCount + j + 1;
      numbers[9 + 4 * j] = quotaDeltas.get(j)[0];
      numbers[10 + 4 * j] = quotaDeltas.get(j)[1];
      numbers[11 + 4 * j] = quotaDeltas.get(j)[2];
    }
    if (all.length == 0) {
      return CompletableFuture.completedFuture(List.of());
    }
    int levelCount = tokens ? levelArgs.length : 0;
    return watched(all[0], link.async().thenCompose(redis ->
        RECONCILE.submit(redis, LuaScript.list(), all, numbers, levelArgs, levelCount)));
  }

  /**
   * Validates a charge of model tokens used outside a call; returns whether Redis has anything to
   * do (some tokens, and a level that limits them).
   *
   * @throws IllegalArgumentException on bad input
   */
  boolean planChargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {
    checkLists(levels, keys);
    checkLevels(levels, keys);
    if (modelTokens < 0) {
      throw new IllegalArgumentException("modelTokens must be >= 0, but was " + modelTokens);
    }
    if (modelTokens == 0) {
      return false;
    }
    for (Budget b : levels) {
      if (b.modelTokens() != null) {
        return true;
      }
    }
    return false;
  }

  @Override
  public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {
    if (planChargeModelTokens(levels, keys, modelTokens)) {
      long sent = System.nanoTime();
      master(levels, keys).replies()
          .await(submitChargeModelTokens(levels, keys, modelTokens), sent);
    }
  }

  @Override
  public CompletionStage<Void> chargeModelTokensAsync(
      List<Budget> levels, List<String> keys, long modelTokens) {
    if (!planChargeModelTokens(levels, keys, modelTokens)) {
      return CompletableFuture.completedFuture(null);
    }
    return submitChargeModelTokens(levels, keys, modelTokens).thenApply(ignored -> null);
  }

  /**
   * Sends a validated charge of model tokens to Redis: one script call that adds an entry to the
   * model-token window of every level that limits them.
   */
  CompletableFuture<List<Object>> submitChargeModelTokens(
      List<Budget> levels, List<String> keys, long modelTokens) {
    ScriptBudget[] scripted = scripted(levels);
    double[] numbers = timeNumbers(6); // ARGV[1] (see charge-model-tokens.lua)
    numbers[3] = levels.size();
    numbers[4] = RESERVATION_ID_BASE;
    numbers[5] = modelTokens;
    int keyCount = keyCount(scripted);
    String[] all = new String[keyCount + 1];
    byte[][] levelArgs = new byte[scripted.length][];
    all[keyCount] = levelKeys(keys, scripted, all, levelArgs);
    return watched(all[0], link.async().thenCompose(redis -> CHARGE_MODEL_TOKENS.submit(
        redis, LuaScript.list(), all, numbers, levelArgs, levelArgs.length)));
  }

  /**
   * Validates a release; returns whether Redis has anything to do (the reservation holds slots).
   *
   * @throws IllegalArgumentException on bad input
   */
  boolean planRelease(@Nullable Reservation reservation) {
    Args.notNull("reservation", reservation);
    if (!reservation.holdsSlots()) {
      return false;
    }
    checkMadeHere(reservation);
    return true;
  }

  @Override
  public void release(Reservation reservation) {
    if (planRelease(reservation)) {
      long sent = System.nanoTime();
      master(reservation.levels(), reservation.keys()).replies()
          .await(submitRelease(reservation), sent);
    }
  }

  /**
   * Sends a validated release to Redis: one script call that removes the reservation's lease
   * from the slots of every level that limits concurrency.
   */
  CompletableFuture<List<Object>> submitRelease(Reservation reservation) {
    if (acrossSlots(reservation.levels(), reservation.keys())) {
      return eachSlot(reservation, Reservation::holdsSlots, this::submitRelease);
    }
    // ARGV[1] (see release.lua): no time is read (a 0 where lib.lua expects now), then the id
    double[] numbers = {0, 1, 0, reservation.id()};
    String[] keys = slotKeys(reservation);
    return watched(keys[0], link.async().thenCompose(redis ->
        RELEASE.submit(redis, LuaScript.list(), keys, numbers, new byte[0][], 0)));
  }

  /**
   * Settles a reservation whose upstream lies on another Cluster slot than its root on each slot:
   * split in two, the caller's levels (with the quotas) and the upstream's level alone, each part
   * that {@code holds} something is sent on its own; completes once both are answered.
   */
  private CompletableFuture<List<Object>> eachSlot(Reservation r, Predicate<Reservation> holds,
      Function<Reservation, CompletableFuture<List<Object>>> send) {
    int n = r.levels().size() - 1;
    Reservation levels = new Reservation(r.decision(), r.levels().subList(0, n),
        r.keys().subList(0, n), r.estimate(), r.id(), r.remainingModelTokens(),
        r.modelTokensResetMs(), r.estimatedSpend(), r.quotaAtMs(), r.quotas(), List.of());
    Reservation upstream = new Reservation(r.decision(), r.levels().subList(n, n + 1),
        r.keys().subList(n, n + 1), r.estimate(), r.id(), r.remainingModelTokens(),
        r.modelTokensResetMs());
    CompletableFuture<List<Object>> none = CompletableFuture.completedFuture(List.of());
    return (holds.test(levels) ? send.apply(levels) : none)
        .thenCombine(holds.test(upstream) ? send.apply(upstream) : none, (a, b) -> a);
  }

  /**
   * The slots keys of a reservation made here: one per level that limits concurrency, root first,
   * all under the root's hash tag.
   */
  String[] slotKeys(Reservation reservation) {
    List<Budget> levels = reservation.levels();
    ScriptBudget[] scripted = scripted(levels);
    String root = reservation.keys().get(0);
    String[] all = new String[keyCount(scripted)];
    List<String> slots = new ArrayList<>(levels.size());
    int k = 0;
    for (int i = 0; i < scripted.length; i++) {
      ScriptBudget b = scripted[i];
      b.copyKeys(root, reservation.keys().get(i), all, k);
      k += b.keyCount;
      if (b.budget.concurrency() != null) {
        slots.add(all[k - 1]);
      }
    }
    return slots.toArray(String[]::new);
  }

  /**
   * Sends one renewal of slots to Redis: one script call that makes each listed slot that still
   * counts expire a slot lease from now, never after its lease timeout; completes with the number
   * of slots renewed.
   *
   * @param keys slots keys (on a Cluster, all in one hash slot)
   * @param ids per key, the reservation ids of its slots to renew
   */
  CompletableFuture<Long> submitRenew(String[] keys, long[][] ids) {
    int size = 4 + keys.length;
    for (long[] of : ids) {
      size += of.length;
    }
    double[] numbers = timeNumbers(size); // ARGV[1] (see renew.lua)
    numbers[3] = slotLeaseUnits;
    int at = 4;
    for (long[] of : ids) {
      numbers[at++] = of.length;
      for (long id : of) {
        numbers[at++] = id;
      }
    }
    return watched(keys[0], link.async().thenCompose(redis ->
        RENEW.submit(redis, LuaScript.list(), keys, numbers, new byte[0][], 0)))
        .thenApply(reply -> (Long) reply.get(0));
  }

  /** A level of a write-back: its state key and its limits (a budget's, or a variant's). */
  private record WrittenLevel(String state, byte[] limits) {}

  /**
   * Sends one batch of an outage journal to Redis: one {@code write-back.lua} call on the batch's
   * root key (one hash tag) that charges what the fallback admitted, and completes with the ids
   * Redis numbered for the calls that hold model tokens or slots, in order.
   *
   * @param localNanos the time the calls' times count from ({@code System.nanoTime()}, or the
   *     ticker's reading when time is the ticker's): each is sent as its age
   */
  CompletableFuture<long[]> submitWriteBack(OutageJournal.Batch batch, long localNanos) {
    List<String> keys = new ArrayList<>();
    Map<String, Integer> keyIndex = new HashMap<>();
    String rootPart = layout.part(batch.root());
    keys.add(layout.writeBack(rootPart, batch.id()));
    keys.add(layout.sequence(rootPart));
    Map<WrittenLevel, Integer> levelIndex = new LinkedHashMap<>();
    List<int[]> levelKeys = new ArrayList<>();
    List<byte[]> levelArgs = new ArrayList<>();
    List<Double> calls = new ArrayList<>();
    double[] head = timeNumbers(8);
    long nowMs = wallClock.millis();
    for (OutageJournal.Admitted a : batch.calls()) {
      Call call = a.call;
      // on a Cluster, only the root's slot: an upstream's level there is not written back
      ScriptBudget[] scripted = scripted(call.levels(),
          link.cluster() ? call.callerLevels() : call.levels().size());
      String[] all = new String[keyCount(scripted)];
      byte[][] args = new byte[scripted.length][];
      levelKeys(call.keys(), scripted, all, args);
      Consumption used = a.sentSettled;
      // whole time units, rounded down (an entry lands no earlier than its call): the log's
      // entries are whole numbers of units from a whole base
      double age = ticker != null ? head[0] - a.at : Math.floor((localNanos - a.at) / 1000.0);
      calls.add(Math.max(0, age));
      calls.add(call.cost());
      calls.add((double) (used != null ? used.modelTokens() : call.estimate()));
      calls.add(a.numbered() ? 1.0 : 0.0);
      calls.add(a.made.holdsSlots() && !a.sentReleased ? 1.0 : 0.0);
      calls.add((double) scripted.length);
      int k = 0;
      for (int i = 0; i < scripted.length; i++) {
        ScriptBudget b = scripted[i];
        Integer d = levelIndex.get(new WrittenLevel(all[k], args[i]));
        if (d == null) {
          d = levelIndex.size() + 1;
          levelIndex.put(new WrittenLevel(all[k], args[i]), d);
          int j = k;
          int s = index(keys, keyIndex, all[j++]);
          int t = b.budget.modelTokens() == null ? 0 : index(keys, keyIndex, all[j++]);
          int c = b.budget.concurrency() == null ? 0 : index(keys, keyIndex, all[j]);
          levelKeys.add(new int[] {s, t, c});
          levelArgs.add(args[i]);
        }
        calls.add((double) d);
        k += b.keyCount;
      }
      QuotaFrame quotas = call.quotas();
      if (quotas == null) {
        calls.add(0.0);
        continue;
      }
      String[] counters = quotas.keys(stateKeys(scripted, all));
      calls.add((double) counters.length);
      Consumption charged = used != null ? used : quotas.estimate;
      int q = 0;
      for (Budget level : call.levels()) {
        for (QuotaLimit quota : level.quotas()) {
          calls.add((double) index(keys, keyIndex, counters[q++]));
          calls.add((double) quota.unit().amount(charged));
          calls.add(used != null ? 0.0 : (double) QuotaFrame.inFlight(quota, quotas.estimate));
          long end = QuotaFrame.period(quota, quotas.nowMs)[1];
          calls.add((double) Math.max(1, end + QuotaFrame.RETENTION_MS - nowMs));
        }
      }
    }
    double[] numbers = new double[8 + 3 * levelKeys.size() + calls.size()];
    System.arraycopy(head, 0, numbers, 0, 3); // ARGV[1] (see write-back.lua)
    numbers[3] = RESERVATION_ID_BASE;
    numbers[4] = slotLeaseUnits;
    numbers[5] = WRITE_BACK_MARKER_MS;
    numbers[6] = levelKeys.size();
    numbers[7] = batch.calls().size();
    int at = 8;
    for (int[] l : levelKeys) {
      numbers[at++] = l[0];
      numbers[at++] = l[1];
      numbers[at++] = l[2];
    }
    for (double v : calls) {
      numbers[at++] = v;
    }
    String[] sent = keys.toArray(String[]::new);
    byte[][] limits = levelArgs.toArray(byte[][]::new);
    return watched(sent[0], link.async().thenCompose(redis -> WRITE_BACK.submit(
        redis, LuaScript.list(), sent, numbers, limits, limits.length)))
        .thenApply(LuaRateLimitStore::ids);
  }

  /** The index in KEYS (from 1) of {@code key}, added when new. */
  private static int index(List<String> keys, Map<String, Integer> index, String key) {
    Integer i = index.get(key);
    if (i == null) {
      keys.add(key);
      i = keys.size();
      index.put(key, i);
    }
    return i;
  }

  /** The ids of a write-back's reply, a string of numbers separated by spaces. */
  private static long[] ids(List<Object> reply) {
    String text = reply.isEmpty() || reply.get(0) == null ? "" : reply.get(0).toString().trim();
    if (text.isEmpty()) {
      return new long[0];
    }
    String[] parts = text.split(" ");
    long[] ids = new long[parts.length];
    for (int i = 0; i < parts.length; i++) {
      ids[i] = Long.parseLong(parts[i]);
    }
    return ids;
  }

  /** Whether this store's Redis is a Cluster, where one script's keys share one hash slot. */
  boolean cluster() {
    return link.cluster();
  }

  /** Whether a reservation's id was numbered by a Redis store (not by an in-memory fallback). */
  static boolean fromRedis(Reservation reservation) {
    return reservation.id() > RESERVATION_ID_BASE;
  }

  @Override
  public Decision acquire(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    return execute(plan(levels, keys, cost, composition)).decision();
  }

  @Override
  public Decision acquire(Budget budget, String key, double cost, Composition composition) {
    return execute(plan(budget, key, cost, composition)).decision();
  }

  @Override
  public Optional<PlanAssignments> planAssignments() {
    return Optional.of(plans);
  }

  @Override
  public Optional<StoreAdministration> administration() {
    return Optional.of(administration);
  }

  /** The plan assignments on Redis, unguarded. */
  RedisPlans redisPlans() {
    return plans;
  }

  /** The administration on Redis, unguarded. */
  RedisAdministration redisAdministration() {
    return administration;
  }

  /** Connects, waiting up to {@code wait}, and loads the scripts; throws on failure. */
  void warmUp(Duration wait) {
    RedisClusterCommands<String, String> redis = link.commands(wait);
    redis.scriptLoad(ACQUIRE.source);
    redis.scriptLoad(RedisAdministration.INSPECT.source);
    redis.scriptLoad(RECONCILE.source);
    redis.scriptLoad(REFUND.source);
    redis.scriptLoad(RELEASE.source);
    redis.scriptLoad(HEARTBEAT.source);
    redis.scriptLoad(RENEW.source);
    redis.scriptLoad(CHARGE_MODEL_TOKENS.source);
    redis.scriptLoad(WRITE_BACK.source);
    redis.scriptLoad(REPORT.source);
    redis.scriptLoad(UPSTREAM_STATUS.source);
    redis.scriptLoad(UPSTREAM_ACQUIRE.source);
    if (serverClock != null) {
      List<String> time = redis.time();
      serverClock.sample(Long.parseLong(time.get(0)) * 1_000_000 + Long.parseLong(time.get(1)),
          System.nanoTime());
    }
  }

  /**
   * A script's {@code ARGV[1]} of {@code size} numbers, the first three set as every script reads
   * them (see lib.lua): now (NaN: the server's {@code TIME}), time units per millisecond, the least
   * TTL in milliseconds.
   */
  double[] timeNumbers(int size) {
    double[] numbers = new double[size];
    if (ticker == null) {
      numbers[0] = Double.NaN;
      numbers[1] = 1000;
    } else {
      numbers[0] = ticker.read();
      numbers[1] = 1_000_000;
      numbers[2] = TICKER_MIN_TTL_MS;
    }
    return numbers;
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream, UpstreamTurn turn) {
    return execute(planTurn(levels, keys, cost, estimate, composition, upstream, turn));
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream,
      UpstreamTurn turn) {
    return submitPlanned(planTurn(levels, keys, cost, estimate, composition, upstream, turn));
  }

  /**
   * {@inheritDoc}
   *
   * <p>The order lives in Redis under each upstream's hash tag ({@link RedisUpstreamOrder}); it
   * subscribes to its wake-ups when first asked for.
   */
  @Override
  public UpstreamOrder upstreamOrder() {
    RedisUpstreamOrder o = order;
    if (o == null) {
      synchronized (this) {
        o = order;
        if (o == null) {
          o = new RedisUpstreamOrder(this, link, layout);
          order = o;
        }
      }
    }
    return o;
  }

  /**
   * Sends one script of an upstream's order ({@code order-*.lua}) on the slot of {@code key}, with
   * the permission of the circuit breaker of the master that serves it: completes with the reply,
   * or fails with a {@link RedisException} when the breaker is open, the call fails, or Redis
   * answers nothing within the bounds of {@link Replies}.
   */
  <T> CompletableFuture<T> runOrder(LuaScript script,
      Supplier<CommandOutput<String, String, T>> output,
      String key, double[] numbers, byte[][] args) {
    RedisMasters.Master master = masters.forKey(key);
    RedisBreaker breaker = master.breaker();
    if (!breaker.tryAcquirePermission()) {
      return CompletableFuture.failedFuture(
          new RedisException("Redis does not answer (its circuit breaker is open)"));
    }
    long start = System.nanoTime();
    CompletableFuture<T> sent = watched(master, link.async().thenCompose(redis ->
        script.submit(redis, output, new String[] {key}, numbers, args, args.length)));
    return master.replies().within(sent, start).whenComplete((reply, failure) -> {
      if (failure == null) {
        breaker.succeeded(start);
      } else {
        breaker.failed(Replies.redisException(failure), start);
      }
    });
  }

  @Override
  public void close() {
    RedisUpstreamOrder o = order;
    if (o != null) {
      o.close();
    }
    link.close();
  }
}
