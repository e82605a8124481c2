package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.lettuce.core.RedisException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The public store: {@link LuaRateLimitStore} behind a circuit breaker and the failure policy.
 *
 * <p>A call waits for Redis as {@link Replies} says: while Redis answers the calls queued before
 * it, and not once Redis has answered nothing for the silence timeout. A call that gets no reply is
 * answered by the failure policy; its script, if Redis runs it later, charges nothing after the
 * call's deadline, and a charge it made before that (a reply that came too late) is refunded when
 * the reply arrives. So a call answered by the policy is not also charged in Redis.
 *
 * <p>One failed call does not switch the store to the policy: a circuit breaker (Resilience4j)
 * opens when the failure rate over the last calls reaches its threshold, and then the policy
 * answers every call without waiting on Redis until the retry interval has passed; a few probe
 * calls then decide whether it closes again ({@link RedisBreaker}). The heartbeats and the health
 * check ({@link RedisHeartbeat}), the renewals of slots ({@link SlotRenewal}), the administration
 * ({@link GuardedAdministration}) and the plan assignments ({@link GuardedPlans}) go through the
 * breakers too.
 *
 * <p>The silence clock and the breaker are kept per master ({@link RedisMasters}): one for a
 * standalone server or a Sentinel's master, one per master on a Cluster, where a call waits on, and
 * counts for, the master that serves its root key's hash slot. So a Cluster master that is frozen
 * or failing sends to the policy only the calls on the keys it serves.
 */
final class GuardedRedisStore implements RedisRateLimitStore {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  private final LuaRateLimitStore redis;
  private final FailurePolicy policy;
  private final @Nullable FallbackStore fallback;
  private final RedisMasters masters;
  private final RedisHeartbeat heartbeat;
  private final SlotRenewal renewal;
  private final @Nullable WriteBack writeBack;
  private final GuardedAdministration administration;
  private final GuardedPlans plans;
  private final long retryMs;
  private final LongAdder refunds = new LongAdder();
  private final ScheduledExecutorService timer;

  /**
   * A store on {@code redis}, guarded by the circuit breakers of its masters ({@link
   * LuaRateLimitStore#masters}).
   */
  GuardedRedisStore(LuaRateLimitStore redis, FailurePolicy policy, Duration retryInterval,
      Duration heartbeatInterval, Duration slotLease, Ticker clock,
      InstantSource wallClock, ScheduledExecutorService timer) {
    this.redis = redis;
    this.policy = policy;
    this.retryMs = Math.max(1, retryInterval.toMillis());
    this.fallback = policy == FailurePolicy.LOCAL_FALLBACK ? new FallbackStore(clock, wallClock, retryMs) : null;
    this.masters = redis.masters();
    this.heartbeat = new RedisHeartbeat(redis, masters, fallback, heartbeatInterval, timer);
    this.renewal = new SlotRenewal(redis, masters, clock, slotLease);
    this.writeBack = fallback == null ? null
        : new WriteBack(redis, fallback.journal(), renewal, clock, retryInterval.toNanos());
    this.administration = new GuardedAdministration(redis, masters, fallback);
    this.plans = new GuardedPlans(redis, masters, fallback != null);
    this.timer = timer;
  }

  /**
   * Connects and loads the scripts, waiting up to {@code wait}, then starts the heartbeats and the
   * renewal of slots; a failure opens the circuit breaker of every master known then, since Redis
   * is known to be unavailable.
   */
  void start(Duration wait) {
    heartbeat.start(wait);
    renewal.start(timer);
    if (writeBack != null) {
      writeBack.start(timer);
    }
  }

  /**
   * Renews the slots of this instance's calls in flight now, as the timer does every third of the
   * slot lease (for tests).
   *
   * @return a future that completes once every renewal is answered or has failed
   */
  CompletableFuture<Void> renewSlots() {
    return renewal.renew();
  }

  /** The calls in flight whose slots this instance renews (for tests). */
  int renewedCalls() {
    return renewal.tracked();
  }

  /**
   * Marks this instance live in Redis now, as the timer does at every interval (for tests).
   *
   * @return a future that completes once the heartbeat is answered or has failed
   */
  CompletableFuture<Void> heartbeat() {
    return heartbeat.beat();
  }

  @Override
  public Decision acquire(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    return decide(redis.plan(levels, keys, cost, composition)).decision();
  }

  @Override
  public Decision acquire(Budget budget, String key, double cost, Composition composition) {
    return decide(redis.plan(budget, key, cost, composition)).decision();
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      long estimatedModelTokens, Composition composition) {
    return decide(redis.planReserve(levels, keys, cost, estimatedModelTokens, composition));
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition) {
    return decide(redis.planReserve(levels, keys, cost, estimate, composition));
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition) {
    return decideAsync(redis.planReserve(levels, keys, cost, estimate, composition));
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream) {
    return decide(redis.planUpstream(levels, keys, cost, estimate, composition, upstream));
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream) {
    return decideAsync(redis.planUpstream(levels, keys, cost, estimate, composition, upstream));
  }

  /**
   * {@inheritDoc}
   *
   * <p>While the breaker of the master that serves the caller's root is open, the failure policy
   * answers as for any call, and the local fallback ignores the turn.
   */
  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream, UpstreamTurn turn) {
    return decide(redis.planTurn(levels, keys, cost, estimate, composition, upstream, turn));
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream,
      UpstreamTurn turn) {
    return decideAsync(redis.planTurn(levels, keys, cost, estimate, composition, upstream, turn));
  }

  /**
   * {@inheritDoc}
   *
   * <p>The order in Redis ({@link RedisUpstreamOrder}): each of its calls goes through the breaker
   * of the master that serves the upstream, and completes exceptionally within the bounded wait
   * when Redis does not answer.
   */
  @Override
  public UpstreamOrder upstreamOrder() {
    return redis.upstreamOrder();
  }

  /**
   * {@inheritDoc}
   *
   * <p>The report reaches Redis under the breaker of the master that serves the upstream; one that
   * cannot reach it is lost (and counted as an error). With the local fallback, each share of the
   * fallback applies it too, scaled as the share scales the upstream, so that a decision during an
   * outage keeps to what the provider said.
   */
  @Override
  public void report(Upstream upstream, ProviderReport report) {
    if (redis.planReport(upstream, report)) {
      if (fallback != null) {
        fallback.report(upstream, report);
      }
      settle(redis.upstreamMaster(upstream), () -> redis.submitReport(upstream, report));
    }
  }

  @Override
  public CompletionStage<Void> reportAsync(Upstream upstream, ProviderReport report) {
    if (!redis.planReport(upstream, report)) {
      return CompletableFuture.completedFuture(null);
    }
    if (fallback != null) {
      fallback.report(upstream, report);
    }
    return settleAsync(redis.upstreamMaster(upstream), () -> redis.submitReport(upstream, report));
  }

  /**
   * {@inheritDoc}
   *
   * <p>While Redis does not answer, the fallback's share answers (what this instance counted
   * locally, against the share's limits); without the fallback an {@link IllegalStateException}
   * is thrown.
   */
  @Override
  public UpstreamStatus upstreamStatus(Upstream upstream) {
    redis.planReport(upstream, ProviderReport.EMPTY); // validates
    FallbackStore f = fallback;
    RedisMasters.Master master = redis.upstreamMaster(upstream);
    return master.breaker().call(() -> redis.upstreamStatus(upstream),
        f == null ? null : () -> f.upstreamStatus(upstream));
  }

  @Override
  public CompletionStage<Decision> acquireAsync(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    return decideAsync(redis.plan(levels, keys, cost, composition)).thenApply(Reservation::decision);
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, long estimatedModelTokens, Composition composition) {
    return decideAsync(redis.planReserve(levels, keys, cost, estimatedModelTokens, composition));
  }

  @Override
  public CompletionStage<Void> reconcileAsync(Reservation reservation, long actualModelTokens) {
    redis.planReconcile(reservation, actualModelTokens); // validates
    return reconcileAsync(reservation,
        new Consumption(1, actualModelTokens, reservation.estimatedSpend()));
  }

  @Override
  public CompletionStage<Void> reconcileAsync(Reservation reservation, Consumption actual) {
    if (!redis.planReconcile(reservation, actual)) {
      return CompletableFuture.completedFuture(null);
    }
    if (!LuaRateLimitStore.fromRedis(reservation)) {
      Reservation onRedis = fallback == null ? null : fallback.reconcile(reservation, actual);
      return onRedis == null ? CompletableFuture.completedFuture(null)
          : settleAsync(master(onRedis), () -> redis.submitReconcile(onRedis, actual));
    }
    return settleAsync(master(reservation), () -> redis.submitReconcile(reservation, actual));
  }

  /**
   * Gives back on Redis the slots of a reservation Redis made (and the slots its mirror holds in
   * the fallback), and on the fallback those of one the fallback made. Its slots are no longer
   * renewed from then on, so a release that cannot reach Redis is lost (and counted as an error)
   * only until they expire by themselves, within one slot lease.
   */
  @Override
  public void release(Reservation reservation) {
    Reservation onRedis = redis.planRelease(reservation) ? onRedisAfterFallback(reservation) : null;
    if (onRedis != null) {
      settle(master(onRedis), () -> redis.submitRelease(onRedis));
    }
  }

  @Override
  public CompletionStage<Void> releaseAsync(Reservation reservation) {
    Reservation onRedis = redis.planRelease(reservation) ? onRedisAfterFallback(reservation) : null;
    return onRedis == null ? CompletableFuture.completedFuture(null)
        : settleAsync(master(onRedis), () -> redis.submitRelease(onRedis));
  }

  /**
   * Gives back in the fallback the slots a reservation holds there (its own, or a mirror's);
   * returns the reservation whose slots Redis holds too (itself, or the one Redis holds of a
   * reservation the fallback made and wrote back), else null.
   */
  private @Nullable Reservation onRedisAfterFallback(Reservation reservation) {
    renewal.forget(reservation);
    Reservation written = fallback == null ? null : fallback.release(reservation);
    if (written != null) {
      renewal.forget(written);
      return written;
    }
    return LuaRateLimitStore.fromRedis(reservation) ? reservation : null;
  }

  /** The master that serves a reservation's keys. */
  private RedisMasters.Master master(Reservation reservation) {
    return redis.master(reservation.levels(), reservation.keys());
  }

  /**
   * Sends a call that settles an earlier one (a reconciliation, a release) with the permission of
   * the circuit breaker of {@code master}, which serves its keys, and waits for its reply; one that
   * cannot reach Redis is lost, and counted as an error.
   */
  private void settle(RedisMasters.Master master, Supplier<CompletableFuture<List<Object>>> send) {
    RedisBreaker breaker = master.breaker();
    if (!breaker.tryAcquirePermission()) {
      return;
    }
    long start = System.nanoTime();
    try {
      master.replies().await(send.get(), start);
      breaker.succeeded(start);
    } catch (RedisException e) {
      breaker.failed(e, start);
    } catch (RuntimeException e) {
      breaker.releasePermission();
      throw e;
    }
  }

  /** Like {@link #settle} without blocking: completes once answered, or lost. */
  private CompletionStage<Void> settleAsync(RedisMasters.Master master,
      Supplier<CompletableFuture<List<Object>>> send) {
    RedisBreaker breaker = master.breaker();
    if (!breaker.tryAcquirePermission()) {
      return CompletableFuture.completedFuture(null);
    }
    long start = System.nanoTime();
    CompletableFuture<List<Object>> sent;
    try {
      sent = send.get();
    } catch (RedisException e) {
      breaker.failed(e, start);
      return CompletableFuture.completedFuture(null);
    } catch (RuntimeException e) {
      breaker.releasePermission();
      throw e;
    }
    return master.replies().within(sent, start).handle((done, failure) -> {
      if (failure == null) {
        breaker.succeeded(start);
      } else {
        breaker.failed(Replies.redisException(failure), start);
      }
      return null;
    });
  }

  /**
   * Reconciles on Redis a reservation Redis made, and on the fallback one the fallback made. A
   * reconciliation that cannot reach Redis is lost (and counted as an error).
   */
  @Override
  public void reconcile(Reservation reservation, long actualModelTokens) {
    redis.planReconcile(reservation, actualModelTokens); // validates
    reconcile(reservation, new Consumption(1, actualModelTokens, reservation.estimatedSpend()));
  }

  /**
   * Settles on Redis a reservation Redis made (its model tokens and quotas, in one script call),
   * and on the fallback one the fallback made. A settlement that cannot reach Redis is lost (and
   * counted as an error).
   */
  @Override
  public void reconcile(Reservation reservation, Consumption actual) {
    if (!redis.planReconcile(reservation, actual)) {
      return;
    }
    if (!LuaRateLimitStore.fromRedis(reservation)) {
      Reservation onRedis = fallback == null ? null : fallback.reconcile(reservation, actual);
      if (onRedis != null) {
        settle(master(onRedis), () -> redis.submitReconcile(onRedis, actual));
      }
      return;
    }
    settle(master(reservation), () -> redis.submitReconcile(reservation, actual));
  }

  /**
   * Charges on Redis model tokens used outside a call. A charge that cannot reach Redis is lost
   * (and counted as an error), as a reconciliation is.
   */
  @Override
  public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {
    if (redis.planChargeModelTokens(levels, keys, modelTokens)) {
      settle(redis.master(levels, keys),
          () -> redis.submitChargeModelTokens(levels, keys, modelTokens));
    }
  }

  @Override
  public CompletionStage<Void> chargeModelTokensAsync(
      List<Budget> levels, List<String> keys, long modelTokens) {
    if (!redis.planChargeModelTokens(levels, keys, modelTokens)) {
      return CompletableFuture.completedFuture(null);
    }
    return settleAsync(redis.master(levels, keys),
        () -> redis.submitChargeModelTokens(levels, keys, modelTokens));
  }

  private Reservation decide(LuaRateLimitStore.Call call) {
    if (call.decided() != null) {
      return call.decidedReservation();
    }
    RedisMasters.Master master = redis.master(call.levels(), call.keys());
    RedisBreaker breaker = master.breaker();
    if (!breaker.tryAcquirePermission()) {
      return outage(call);
    }
    // the caller waits on its own thread, and decodes there: no timer task, no work on Redis's loop
    Replies replies = master.replies();
    long start = System.nanoTime();
    long deadline = start + replies.maxWaitNanos();
    CompletableFuture<AcquireReply> sent = null;
    try {
      if (writeBack != null) { // what the fallback admitted for this root reaches Redis first
        writeBack.before(call.keys().get(0), start, replies);
      }
      sent = redis.submit(call, deadline);
      AcquireReply reply = replies.await(sent, start);
      if (reply.expired) { // see send: sent once more with the corrected estimate
        sent = redis.submit(call, deadline);
        reply = replies.await(sent, start);
        if (reply.expired) {
          throw new RedisException("Redis ran the call after its deadline twice");
        }
      }
      return finish(call, breaker, start, reply, null);
    } catch (RedisException e) {
      if (sent != null) {
        refundWhenLate(call, sent);
      }
      return finish(call, breaker, start, null, e);
    } catch (RuntimeException e) {
      breaker.releasePermission(); // not Redis's failure: the permission goes back unused
      throw e;
    }
  }

  private CompletableFuture<Reservation> decideAsync(LuaRateLimitStore.Call call) {
    if (call.decided() != null) {
      return CompletableFuture.completedFuture(call.decidedReservation());
    }
    RedisMasters.Master master = redis.master(call.levels(), call.keys());
    if (!master.breaker().tryAcquirePermission()) {
      return CompletableFuture.completedFuture(outage(call));
    }
    long start = System.nanoTime();
    CompletableFuture<AcquireReply> sent = writeBack == null ? send(call, master, start)
        : writeBack.beforeAsync(call.keys().get(0), start, master.replies())
            .thenCompose(v -> send(call, master, start));
    return sent.handle((r, failure) -> finish(call, master.breaker(), start, r, failure));
  }

  /**
   * Sends a call (with the circuit breaker's permission) and completes with its reply, or fails
   * with a {@link RedisException}; never blocks. A call whose script found its deadline passed
   * while its caller still waited (the server's clock ran ahead of this process's estimate, which
   * the reply corrected) is sent once more.
   */
  private CompletableFuture<AcquireReply> send(
      LuaRateLimitStore.Call call, RedisMasters.Master master, long start) {
    long deadline = start + master.replies().maxWaitNanos();
    try {
      return send(call, master.replies(), start, deadline, false);
    } catch (RedisException e) {
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      master.breaker().releasePermission(); // not Redis's failure: the permission goes back unused
      throw e;
    }
  }

  private CompletableFuture<AcquireReply> send(LuaRateLimitStore.Call call, Replies replies,
      long start, long deadline, boolean again) {
    CompletableFuture<AcquireReply> sent = redis.submit(call, deadline);
    return replies.within(sent, start).handle((reply, failure) -> {
      if (failure != null) {
        refundWhenLate(call, sent);
        return CompletableFuture.<AcquireReply>failedFuture(failure);
      }
      if (!reply.expired) {
        return CompletableFuture.completedFuture(reply);
      }
      if (again) {
        return CompletableFuture.<AcquireReply>failedFuture(
            new RedisException("Redis ran the call after its deadline twice"));
      }
      try {
        return send(call, replies, start, deadline, true);
      } catch (RuntimeException e) {
        return CompletableFuture.<AcquireReply>failedFuture(e);
      }
    }).thenCompose(f -> f);
  }

  /**
   * The outcome of a sent call: its reply decoded, or the failure policy's answer; recorded by the
   * breaker of the master it was sent to.
   */
  private Reservation finish(LuaRateLimitStore.Call call, RedisBreaker breaker, long start,
      @Nullable AcquireReply reply, @Nullable Throwable failure) {
    if (reply == null) {
      breaker.failed(Replies.redisException(failure), start);
      if (writeBack != null) {
        writeBack.failed(breaker);
      }
      return outage(call);
    }
    if (writeBack != null) {
      writeBack.answered(breaker);
    }
    breaker.succeeded(start);
    if (writeBack != null) {
      writeBack.contacted();
    }
    Reservation r = LuaRateLimitStore.decode(call, reply);
    if (fallback != null && r.decision().allowed()) {
      Decision own = fallback.mirror(call, r);
      if (!own.allowed() && writeBack.holding(breaker)) { // just after an outage: see WriteBack
        fallback.release(r);
        redis.refund(call, reply).whenComplete((refunded, e) -> {
          if (e != null) { // a charge that stays: stricter, never looser
            LOG.log(Level.DEBUG, "could not undo a call held to the share: {0}", e.toString());
          }
        });
        return fallback.heldBack(call, own);
      }
    }
    if (r.holdsSlots()) {
      renewal.track(r);
    }
    return r;
  }

  /**
   * When a call the policy answered gets its reply after all, undoes what it charged on Redis (a
   * call Redis runs after its deadline charges nothing by itself).
   */
  private void refundWhenLate(LuaRateLimitStore.Call call, CompletableFuture<AcquireReply> sent) {
    sent.thenCompose(reply -> redis.refund(call, reply)).whenComplete((refunded, failure) -> {
      if (Boolean.TRUE.equals(refunded)) {
        refunds.increment();
        LOG.log(Level.DEBUG, "refunded a call Redis ran after the failure policy answered it");
      } else if (failure != null && !(Replies.redisException(failure)
          instanceof io.lettuce.core.RedisCommandTimeoutException)) {
        LOG.log(Level.DEBUG, "could not refund a late call: {0}", failure.toString());
      }
    });
  }

  private Reservation outage(LuaRateLimitStore.Call call) {
    String root = call.levels().get(0).name();
    Decision d;
    switch (policy) {
      case FAIL_OPEN:
        d = Decision.allow(0, 0, root);
        break;
      case FAIL_CLOSED:
        d = Decision.retryableDeny(Reason.STORE_UNAVAILABLE, 0, retryMs, 0, root);
        break;
      default:
        return fallback().decide(call);
    }
    return new Reservation(d, call.levels(), call.keys(), call.estimate(), 0, 0, 0);
  }

  private FallbackStore fallback() {
    FallbackStore f = fallback;
    if (f == null) {
      throw new IllegalStateException("no fallback store under policy " + policy);
    }
    return f;
  }

  @Override
  public Optional<PlanAssignments> planAssignments() {
    return Optional.of(plans);
  }

  @Override
  public Optional<StoreAdministration> administration() {
    return Optional.of(administration);
  }

  /**
   * {@inheritDoc}
   *
   * <p>On a Cluster: the failed calls to every master.
   */
  @Override
  public long errorCount() {
    return masters.errorCount();
  }

  /** How many calls answered by the policy were refunded on Redis when their reply came late. */
  long refundCount() {
    return refunds.sum();
  }

  /**
   * Whether calls some master admits must fit this instance's share too, just after an outage
   * (for tests).
   */
  boolean holding() {
    return writeBack != null && writeBack.holding();
  }

  /** What the fallback admitted that waits to be written back (for tests). */
  OutageJournal journal() {
    return fallback().journal();
  }

  /** The fallback's view of the live instance count (1 without a fallback). */
  int liveInstances() {
    return fallback == null ? 1 : fallback.instances();
  }

  /**
   * {@inheritDoc}
   *
   * <p>On a Cluster: whether the circuit breaker of any master is open (or probing), so that the
   * policy answers the calls on the keys that master serves.
   */
  @Override
  public boolean degraded() {
    return masters.degraded();
  }

  /** The Redis side, for tests. */
  LuaRateLimitStore lua() {
    return redis;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Waits at most the shorter of the command timeout and {@value RedisHeartbeat#PING_MILLIS}
   * ms. An answer while the circuit breaker is open lets its probe calls through at once. On a
   * Cluster every master is sent a {@code PING} (at once): {@code true} when every master answered,
   * and each master that answered lets its own probe calls through.
   */
  @Override
  public boolean ping() {
    return heartbeat.ping();
  }

  @Override
  public FailurePolicy failurePolicy() {
    return policy;
  }

  @Override
  public void close() {
    timer.shutdownNow();
    redis.close();
    if (fallback != null) {
      fallback.close();
    }
  }
}
