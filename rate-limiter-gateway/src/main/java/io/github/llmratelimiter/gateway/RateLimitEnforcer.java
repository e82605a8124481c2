package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The one place the gateway asks the store for a decision: it turns a policy and a caller into the
 * levels and keys of one {@link RateLimitStore#reserve(List, List, double, long,
 * io.github.llmratelimiter.core.Composition) store call}, so every level of a hierarchy is decided
 * atomically, and tells the {@link RateLimitObserver}s. The store's {@link
 * io.github.llmratelimiter.core.Reservation} reports what each component of every level admits
 * after the call, which the response's headers tell item by item ({@link RateLimitHeaders}); a
 * call that limits neither model tokens, nor calls in flight, nor quotas reserves nothing.
 *
 * <p>When a level limits model tokens (TPM), the call's estimated model tokens are reserved in the
 * same store call ({@link RateLimitStore#reserve}) and the outcome carries a {@link
 * ModelTokenReservation} that settles them with the call's usage.
 *
 * <p>When a level has quotas (under any plan), the call is reserved with its estimate in every unit
 * a quota counts ({@link RateLimitStore#reserve(List, List, double, Consumption,
 * io.github.llmratelimiter.core.Composition)}): one request, its estimated model tokens, and its
 * estimated cost from the policies' {@link ModelPrices} (the tokens at the model's highest price).
 * The {@link ModelTokenReservation} then settles them with what the call consumed.
 *
 * <p>A policy in shadow mode ({@link RateLimitPolicy#enforce()} false) admits the calls its levels
 * deny, and an admitted call that exceeded a shadow quota is reported the same way: the outcome
 * carries the deny it would have had ({@link RateLimitOutcome#shadowDeny()}).
 *
 * <p>A call is decided under its API key's plan, which a {@link RateLimitPlanResolver} names: the
 * plan's variants of the policy's budgets carry its limits. When a level limits calls in flight,
 * the store takes a slot in the same call ({@link RateLimitStore#reserve}) and the outcome carries
 * the {@link CallSlots} that give it back when the call ends.
 *
 * <p>When a call goes to an {@link Upstream} (its policy or model routes it there, {@link
 * UpstreamRoutes}), it is decided with {@link RateLimitStore#reserve(List, List, double,
 * Consumption, io.github.llmratelimiter.core.Composition, Upstream)}: its levels and the upstream
 * in one store call, with a {@link Consumption} of one request, its estimated model tokens (asked
 * when a level or the upstream limits model tokens) and its estimated cost. The outcome names the
 * upstream ({@link RateLimitOutcome#upstream()}); its reservation's last level is the upstream's, so
 * the call's settlement and release reach the upstream too. An upstream's deny ({@link
 * Reason#UPSTREAM_LIMIT}) is enforced in shadow mode as well: it is the provider's capacity, not
 * the policy's. A call that goes to no upstream is decided exactly as without upstreams.
 *
 * <p>When a {@link UpstreamWaitingRoom} is given, a call its upstream denies may wait for it, up
 * to its policy's longest wait under its plan ({@link UpstreamWaits}), in the room's fair order
 * (its tenant is the root level's key): {@link #acquireAsync} waits without blocking, {@link
 * #acquire} blocks the calling thread at most that long (for blocking callers only; an event
 * loop uses {@link #acquireAsync}). The observers are told the final outcome once, not each
 * attempt; cancelling the stage {@link #acquireAsync} returns takes the call out of the room at
 * once. A call with no longest wait is decided at once, as without a room, and counted in the
 * room's order as served. Settling a call, giving back its slots and a provider's report tell the
 * room that its upstream may admit again.
 *
 * <p>When the store keeps a shared order of the calls that wait for its upstreams ({@link
 * RateLimitStore#upstreamOrder()}), every call to an upstream is decided with its turn ({@link
 * RateLimitStore#reserve(List, List, double, Consumption, io.github.llmratelimiter.core.Composition,
 * Upstream, UpstreamTurn)}: its tenant, its plan's weight and priority class, its estimate), so that
 * the store counts its service in that order; a settled call corrects its tenant's counter there
 * ({@link UpstreamOrder#settled}), and capacity freed on this instance {@linkplain
 * UpstreamOrder#signal signals} it. While calls wait for an upstream, the store refuses a call that
 * does not name the first of them: a call that may wait then joins the order (the room should be
 * given the store's order), a call that may not (no longest wait) gets the upstream's deny at once.
 *
 * <p>Every decision is offered twice: {@link #acquire(String, RateLimitKey, double, LongSupplier)}
 * answers on the calling thread, {@link #acquireAsync} through the store's asynchronous API without
 * blocking the caller (for an event loop). Both give the same outcomes and failures.
 *
 * <p>It depends only on the {@link RateLimitStore} interface: the in-memory store and distributed
 * stores are interchangeable. Thread-safe.
 */
public final class RateLimitEnforcer {

  private static final System.Logger LOG = System.getLogger(RateLimitEnforcer.class.getName());

  private final RateLimitStore store;
  private final RateLimitPolicies policies;
  private final StoreFailure storeFailure;
  private final Supplier<? extends List<RateLimitObserver>> observerSupplier;
  private final RateLimitPlanResolver plans;
  private final UpstreamRoutes routes;
  private final @Nullable UpstreamWaitingRoom room;
  private final UpstreamWaits waits;
  private final @Nullable UpstreamOrder order;
  private volatile @Nullable List<RateLimitObserver> observers;
  /**
   * The unknown plan names a resolver gave and the failures of resolvers and observers, each logged
   * once (at most {@value #MAX_WARNED}).
   */
  private final Set<String> warned = ConcurrentHashMap.newKeySet();
  private static final int MAX_WARNED = 100;

  /**
   * Creates the enforcer.
   *
   * @param store the store that decides
   * @param policies the policies
   * @param storeFailure what to do when the store fails
   * @param observers the observers, in the order they are told; asked once, on the first decision
   *     (so that an observer may itself depend on this enforcer)
   * @throws IllegalArgumentException if an argument is null
   */
  public RateLimitEnforcer(RateLimitStore store, RateLimitPolicies policies, StoreFailure storeFailure,
      Supplier<? extends List<RateLimitObserver>> observers) {
    this(store, policies, storeFailure, observers,
        RateLimitPlanResolver.fixed(policies == null ? "-" : policies.defaultPlan()));
  }

  /**
   * Creates the enforcer with the resolver of each key's plan.
   *
   * @param store the store that decides
   * @param policies the policies
   * @param storeFailure what to do when the store fails
   * @param observers the observers, in the order they are told; asked once, on the first decision
   * @param plans names each API key's plan; a name that is not a configured plan, or a resolver
   *     that fails, gives the default plan (logged once per name)
   * @throws IllegalArgumentException if an argument is null
   */
  public RateLimitEnforcer(RateLimitStore store, RateLimitPolicies policies, StoreFailure storeFailure,
      Supplier<? extends List<RateLimitObserver>> observers, RateLimitPlanResolver plans) {
    this(store, policies, storeFailure, observers, plans, UpstreamRoutes.NONE);
  }

  /**
   * Creates the enforcer with the resolver of each key's plan and the upstreams calls go to.
   *
   * @param store the store that decides; it must keep upstreams when {@code routes} has any
   * @param policies the policies
   * @param storeFailure what to do when the store fails
   * @param observers the observers, in the order they are told; asked once, on the first decision
   * @param plans names each API key's plan
   * @param routes which upstream each call goes to ({@link UpstreamRoutes#NONE}: none)
   * @throws IllegalArgumentException if an argument is null
   */
  public RateLimitEnforcer(RateLimitStore store, RateLimitPolicies policies, StoreFailure storeFailure,
      Supplier<? extends List<RateLimitObserver>> observers, RateLimitPlanResolver plans,
      UpstreamRoutes routes) {
    this(store, policies, storeFailure, observers, plans, routes, null, UpstreamWaits.NONE);
  }

  /**
   * Creates the enforcer with the upstreams calls go to and the room where they wait for them.
   *
   * @param store the store that decides; it must keep upstreams when {@code routes} has any
   * @param policies the policies
   * @param storeFailure what to do when the store fails
   * @param observers the observers, in the order they are told; asked once, on the first decision
   * @param plans names each API key's plan
   * @param routes which upstream each call goes to ({@link UpstreamRoutes#NONE}: none)
   * @param room where calls wait for their upstream; {@code null} for none (no call waits)
   * @param waits how long each policy's calls wait and how each plan is weighed
   * @throws IllegalArgumentException if an argument other than {@code room} is null
   */
  public RateLimitEnforcer(RateLimitStore store, RateLimitPolicies policies, StoreFailure storeFailure,
      Supplier<? extends List<RateLimitObserver>> observers, RateLimitPlanResolver plans,
      UpstreamRoutes routes, @Nullable UpstreamWaitingRoom room, UpstreamWaits waits) {
    if (store == null || policies == null || storeFailure == null || observers == null
        || plans == null || routes == null || waits == null) {
      throw new IllegalArgumentException(
          "store, policies, storeFailure, observers, plans, routes and waits must not be null");
    }
    this.room = room;
    this.waits = waits;
    this.store = store;
    this.order = routes.isEmpty() ? null : store.upstreamOrder();
    this.policies = policies;
    this.storeFailure = storeFailure;
    this.observerSupplier = observers;
    this.plans = plans;
    this.routes = routes;
  }

  /**
   * Decides one call and charges it as the policy's composition says.
   *
   * @param policyName the policy, or null or blank for the default policy
   * @param key the caller
   * @param cost the call's cost in bucket tokens (the window counts the call once)
   * @return the outcome, allowed or denied
   * @throws InvalidRateLimitRequestException if the policy is unknown or the cost is not a finite
   *     positive number
   * @throws RateLimitStoreUnavailableException if the store fails and failures deny
   */
  public RateLimitOutcome acquire(@Nullable String policyName, RateLimitKey key, double cost) {
    return acquire(policyName, key, cost, () -> 0);
  }

  /**
   * Decides one call and charges it as the policy's composition says, reserving its estimated model
   * tokens on every level that limits them, in the same atomic store call. A call that may wait
   * for its upstream ({@link UpstreamWaits}) blocks the calling thread until the room decides it,
   * at most its longest wait and a second's grace: never call this on an event loop.
   *
   * @param policyName the policy, or null or blank for the default policy
   * @param key the caller
   * @param cost the call's cost in bucket tokens (the window counts the call once)
   * @param estimate the call's estimated model tokens; asked only when a level limits them
   * @return the outcome, allowed or denied; when it reserved model tokens, with the handle that
   *     settles them
   * @throws InvalidRateLimitRequestException if the policy is unknown, the cost is not a finite
   *     positive number or the estimate is negative
   * @throws RateLimitStoreUnavailableException if the store fails and failures deny
   */
  public RateLimitOutcome acquire(
      @Nullable String policyName, RateLimitKey key, double cost, LongSupplier estimate) {
    Call shape = call(policyName, key, cost, estimate);
    long start = System.nanoTime();
    Call call = shape.under(plan(key.apiKey()));
    RateLimitOutcome outcome;
    try {
      if (call.waits()) {
        outcome = waitBlocking(call, cost);
      } else {
        outcome = call.upstream != null && call.turn != null
            ? call.outcome(store.reserve(call.levels, call.keys, cost, call.consumption(),
                policies.composition(), call.upstream, call.turn))
            : call.upstream != null
            ? call.outcome(store.reserve(call.levels, call.keys, cost, call.consumption(),
                policies.composition(), call.upstream))
            : call.quotas
            ? call.outcome(store.reserve(call.levels, call.keys, cost, call.consumption(),
                policies.composition()))
            : call.outcome(store.reserve(call.levels, call.keys, cost, call.estimate,
                policies.composition()));
        served(call, outcome);
      }
    } catch (RuntimeException e) {
      outcome = failed(call, e);
    }
    return observed(outcome, start);
  }

  /**
   * Blocks the calling thread until the room decides a call that may wait: at most its longest
   * wait and a second's grace for the store's answer, after which the call leaves the room with
   * its upstream's deny. An interrupted thread leaves the room at once (interrupt kept).
   */
  private RateLimitOutcome waitBlocking(Call call, double cost) {
    CompletableFuture<RateLimitOutcome> waiting = waitIn(call, cost).toCompletableFuture();
    try {
      return waiting.get(call.maxWait.toNanos() + GRACE_NANOS, TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      throw rethrown(unwrap(e));
    } catch (TimeoutException e) {
      return leave(call, waiting);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return leave(call, waiting);
    }
  }

  private static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** Takes a call out of the room: its deny, or the answer that came first. */
  private RateLimitOutcome leave(Call call, CompletableFuture<RateLimitOutcome> waiting) {
    if (waiting.cancel(false)) {
      return call.upstreamDeny(1);
    }
    try {
      return waiting.join();
    } catch (CompletionException e) {
      throw rethrown(unwrap(e));
    }
  }

  private static RuntimeException rethrown(Throwable failure) {
    if (failure instanceof Error e) {
      throw e;
    }
    return failure instanceof RuntimeException e ? e : new IllegalStateException(failure);
  }

  /** The room's stage for a call that may wait; its attempts go through the store's async API. */
  private CompletionStage<RateLimitOutcome> waitIn(Call call, double cost) {
    UpstreamWaitingRoom r = room;
    assert r != null && call.upstream != null;
    return r.await(new UpstreamWaitingRoom.Call(call.upstream.name(), call.tenant(), call.weight,
            call.priority, call.estimate, call.maxWait),
        UpstreamWaitingRoom.Attempt.inOrder(waiter -> attempt(call, cost, waiter),
            RateLimitOutcome::decision, call::upstreamDeny, RateLimitOutcome::abandon));
  }

  /**
   * One decision of a call through the store's asynchronous API; with the store's order, as the
   * waiting call {@code waiter} of it, or as a call that does not wait when null.
   */
  private CompletionStage<RateLimitOutcome> attempt(Call call, double cost, @Nullable String waiter) {
    try {
      return call.upstream != null && call.turn != null
          ? store.reserveAsync(call.levels, call.keys, cost, call.consumption(),
              policies.composition(), call.upstream,
              waiter == null ? call.turn : call.turn.waiting(waiter)).thenApply(call::outcome)
          : call.upstream != null
          ? store.reserveAsync(call.levels, call.keys, cost, call.consumption(),
              policies.composition(), call.upstream).thenApply(call::outcome)
          : call.quotas
          ? store.reserveAsync(call.levels, call.keys, cost, call.consumption(),
              policies.composition()).thenApply(call::outcome)
          : store.reserveAsync(call.levels, call.keys, cost, call.estimate, policies.composition())
              .thenApply(call::outcome);
    } catch (RuntimeException | Error e) { // bad input, or a store that failed before answering
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Counts a call its upstream admitted without waiting in the room's order. */
  private void served(Call call, RateLimitOutcome outcome) {
    UpstreamWaitingRoom r = room;
    if (r != null && call.upstream != null && outcome.decision().allowed() && !outcome.degraded()) {
      r.admitted(call.upstream.name(), call.tenant(), call.weight, call.priority, call.estimate);
    }
  }

  /** The key's plan from the resolver; the default plan for an unknown name or a failure. */
  private String plan(String apiKey) {
    String plan;
    try {
      plan = plans.plan(apiKey);
    } catch (RuntimeException e) {
      return unknownPlan(null, e);
    }
    return known(plan);
  }

  /**
   * Calls {@code then} with the key's plan (the default plan when the resolver fails or names an
   * unknown one): at once when the resolver answered already (a cached or fixed plan, the common
   * case: no stage is chained), else when its stage completes.
   */
  private void withPlan(String apiKey, Consumer<String> then) {
    CompletionStage<String> stage;
    try {
      stage = plans.planAsync(apiKey);
    } catch (RuntimeException e) {
      then.accept(unknownPlan(null, e));
      return;
    }
    if (stage instanceof CompletableFuture<String> f && f.isDone() && !f.isCompletedExceptionally()) {
      then.accept(known(f.join()));
      return;
    }
    stage.handle((plan, failure) -> failure != null ? unknownPlan(null, unwrap(failure)) : known(plan))
        .thenAccept(then);
  }

  /** The plan when it is one of the configured plans, else the default plan (logged once). */
  private String known(String plan) {
    return policies.containsPlan(plan) ? plan : unknownPlan(plan, null);
  }

  private String unknownPlan(@Nullable String plan, @Nullable Throwable failure) {
    String name = failure != null ? failure.getClass().getName() : String.valueOf(plan);
    if (warned.size() < MAX_WARNED && warned.add(name)) {
      LOG.log(System.Logger.Level.WARNING, failure != null
          // the type only: an application resolver's message may name the key
          ? "The plan resolver failed (" + name + "): calls are decided under the default plan '"
              + policies.defaultPlan() + "' meanwhile"
          : "The plan resolver named the plan '" + plan + "', which is not one of "
              + policies.plans() + ": such calls are decided under the default plan '"
              + policies.defaultPlan() + "'");
    }
    return policies.defaultPlan();
  }

  /**
   * Decides one call like {@link #acquire(String, RateLimitKey, double, LongSupplier)} without
   * blocking the caller: through {@link RateLimitStore#acquireAsync} or {@link
   * RateLimitStore#reserveAsync}. The estimate is asked on the calling thread, before the store; the
   * observers are told on the thread that completes the store's answer.
   *
   * @param policyName the policy, or null or blank for the default policy
   * @param key the caller
   * @param cost the call's cost in bucket tokens (the window counts the call once)
   * @param estimate the call's estimated model tokens; asked only when a level limits them
   * @return a stage that completes with the outcome, allowed or denied, or fails (never with a
   *     {@link CompletionException} around the cause) with {@link InvalidRateLimitRequestException}
   *     or {@link RateLimitStoreUnavailableException} as {@code acquire} throws them; this method
   *     itself never throws
   */
  public CompletionStage<RateLimitOutcome> acquireAsync(
      @Nullable String policyName, RateLimitKey key, double cost, LongSupplier estimate) {
    Acquired result = new Acquired();
    Call call;
    try {
      call = call(policyName, key, cost, estimate);
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
      return result;
    }
    long start = System.nanoTime();
    Call shape = call;
    withPlan(key.apiKey(), plan -> {
      try {
        decideAsync(shape.under(plan), cost, start, result);
      } catch (RuntimeException | Error e) { // on a plan's stage, nothing else would complete it
        result.completeExceptionally(e);
      }
    });
    return result;
  }

  private void decideAsync(Call call, double cost, long start, Acquired result) {
    boolean waits = call.waits();
    CompletionStage<RateLimitOutcome> decided =
        waits ? waitIn(call, cost) : attempt(call, cost, null);
    if (waits) { // a caller that cancels or leaves (a client gone) takes the call out of the room
      result.onLeave(() -> decided.toCompletableFuture().cancel(false));
      result.whenComplete((o, f) -> {
        if (result.isCancelled()) {
          decided.toCompletableFuture().cancel(false);
        }
      });
    }
    decided.whenComplete((outcome, failure) -> {
      try {
        if (waits && failure != null
            && unwrap(failure) instanceof java.util.concurrent.CancellationException) {
          result.completeExceptionally(failure); // it left the room: nothing was charged
          return;
        }
        if (failure == null && !waits) {
          served(call, outcome);
        }
        if (result.isDone()) { // cancelled: the decision stands, an admission is given back
          if (failure == null) {
            observed(outcome, start);
            if (outcome.decision().allowed()) {
              outcome.abandon();
            }
          }
          return;
        }
        RateLimitOutcome o = failure == null ? outcome : failed(call, unwrap(failure));
        if (!result.complete(observed(o, start)) && o.decision().allowed()) {
          o.abandon();
        }
      } catch (RuntimeException | Error e) {
        result.completeExceptionally(e);
      }
    });
  }

  /**
   * Charges model tokens used outside a decided call, after the fact (a batch job's, a tool
   * call's): they are added to the model-token window of every level of the policy that limits
   * model tokens, for this caller, without a request slot or a bucket permit ({@link
   * RateLimitStore#chargeModelTokens}). It never denies; the caller's next calls see the tokens.
   * A charge the store cannot take (it is down) is lost and logged, as a reconciliation is.
   *
   * @param policyName the policy, or null or blank for the default policy
   * @param key the caller (its model picks the per-model budgets, as for a call)
   * @param modelTokens the model tokens used, at least 0
   * @throws InvalidRateLimitRequestException if the policy is unknown or the tokens are negative
   */
  public void chargeModelTokens(@Nullable String policyName, RateLimitKey key, long modelTokens) {
    Charge charge = charge(policyName, key, modelTokens);
    try {
      store.chargeModelTokens(charge.levels, charge.keys, modelTokens);
    } catch (RuntimeException e) {
      chargeFailed(charge.policy, e);
    }
  }

  /**
   * Charges model tokens used outside a decided call like {@link #chargeModelTokens} without
   * blocking the caller, through {@link RateLimitStore#chargeModelTokensAsync}.
   *
   * @param policyName the policy, or null or blank for the default policy
   * @param key the caller
   * @param modelTokens the model tokens used, at least 0
   * @return a stage that completes once the tokens are charged, or the charge was lost to a store
   *     failure (logged); it never fails
   * @throws InvalidRateLimitRequestException if the policy is unknown or the tokens are negative
   */
  public CompletionStage<Void> chargeModelTokensAsync(
      @Nullable String policyName, RateLimitKey key, long modelTokens) {
    Charge charge = charge(policyName, key, modelTokens);
    CompletionStage<Void> charged;
    try {
      charged = store.chargeModelTokensAsync(charge.levels, charge.keys, modelTokens);
    } catch (RuntimeException e) {
      chargeFailed(charge.policy, e);
      return CompletableFuture.completedFuture(null);
    }
    return charged.handle((ignored, failure) -> {
      if (failure != null) {
        chargeFailed(charge.policy, unwrap(failure));
      }
      return null;
    });
  }

  /**
   * Takes a call that waits for its upstream out of the room, for a caller that went away but
   * still wants the stage's answer ({@link RateLimitGateway#chargeAsync}): the stage then fails
   * with a {@link java.util.concurrent.CancellationException}, unless an attempt admitted the call
   * first. A call that does not wait is left to be decided.
   *
   * @param acquired a stage {@link #acquireAsync} returned
   */
  static void leave(CompletionStage<RateLimitOutcome> acquired) {
    if (acquired instanceof Acquired a) {
      a.leave();
    }
  }

  /** The stage of {@link #acquireAsync}: it knows how to take its call out of the room. */
  private static final class Acquired extends CompletableFuture<RateLimitOutcome> {
    private @Nullable Runnable leaving;
    private boolean left;

    /** Runs {@code action} when the caller leaves, at once if it left already. */
    void onLeave(Runnable action) {
      synchronized (this) {
        if (!left) {
          leaving = action;
          return;
        }
      }
      action.run();
    }

    void leave() {
      Runnable action;
      synchronized (this) {
        left = true;
        action = leaving;
      }
      if (action != null) {
        action.run();
      }
    }
  }

  /** What a charge of model tokens outside a call applies to, validated. */
  private record Charge(String policy, List<Budget> levels, List<String> keys) {}

  private Charge charge(@Nullable String policyName, RateLimitKey key, long modelTokens) {
    if (key == null) {
      throw new InvalidRateLimitRequestException("key must not be null", null);
    }
    RateLimitPolicy policy;
    try {
      policy = policies.policy(policyName);
    } catch (IllegalArgumentException e) {
      throw new InvalidRateLimitRequestException(e.getMessage(), e);
    }
    if (modelTokens < 0) {
      throw new InvalidRateLimitRequestException(
          "modelTokens must be >= 0, but was " + modelTokens, null);
    }
    return new Charge(policy.name(), policy.budgets(key), policy.keys(key));
  }

  private static void chargeFailed(String policy, Throwable e) {
    LOG.log(System.Logger.Level.WARNING, "Could not charge model tokens used outside a call on"
        + " policy '" + policy + "': " + e);
  }

  /** The failure a stage's {@link CompletionException} or a future's {@code ExecutionException} wraps. */
  static Throwable unwrap(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /** What one call decides on, validated. */
  private Call call(@Nullable String policyName, RateLimitKey key, double cost, LongSupplier estimate) {
    RateLimitPolicy policy;
    try {
      policy = policies.policy(policyName);
    } catch (IllegalArgumentException e) {
      throw new InvalidRateLimitRequestException(e.getMessage(), e);
    }
    if (!(cost > 0) || Double.isInfinite(cost)) {
      throw new InvalidRateLimitRequestException(
          "cost must be a finite number > 0, but was " + cost, null);
    }
    // a plan's variants limit the same components as the defaults: the shape is every plan's
    List<Budget> levels = policy.budgets(key);
    Upstream upstream = routes.route(policy.name(), key.model());
    boolean limitsModelTokens = upstream != null && upstream.modelTokens() != null;
    for (Budget level : levels) {
      limitsModelTokens |= level.modelTokens() != null;
    }
    boolean quotas = policy.hasQuotas();
    long estimated = limitsModelTokens || policy.quotasEstimate() ? estimate.getAsLong() : 0;
    if (estimated < 0) {
      throw new InvalidRateLimitRequestException(
          "the model-token estimate must be >= 0, but was " + estimated, null);
    }
    long spend = quotas || upstream != null ? policies.prices().estimate(key.model(), estimated) : 0;
    return new Call(policy, key, levels, policy.keys(key), estimated, quotas, spend,
        policy.defaultPlan(), upstream);
  }

  /** The outcome of a store that failed: a failure to decide, or input it rejected. */
  private RateLimitOutcome failed(Call call, Throwable failure) {
    if (failure instanceof IllegalArgumentException e) {
      throw new InvalidRateLimitRequestException("the call cannot be limited: " + e.getMessage(), e);
    }
    if (failure instanceof Error e) {
      throw e;
    }
    if (storeFailure != StoreFailure.ALLOW) {
      throw new RateLimitStoreUnavailableException(call.policy.name(), failure);
    }
    Budget last = call.levels.get(call.levels.size() - 1);
    return new RateLimitOutcome(call.policy, call.key, Decision.allow(0, 0, last.name()),
        call.levels, true, null, null, call.plan, null, null);
  }

  private RateLimitOutcome observed(RateLimitOutcome outcome, long start) {
    long nanos = System.nanoTime() - start;
    for (RateLimitObserver o : observers()) {
      try {
        o.onDecision(outcome, nanos);
      } catch (RuntimeException e) { // the call stands: its slots and reservation stay reachable
        observerFailed(o, e);
      }
    }
    return outcome;
  }

  /** Logs an observer's failure, once per observer and exception type, by type only. */
  private void observerFailed(RateLimitObserver observer, RuntimeException e) {
    if (warned.size() >= MAX_WARNED) {
      return;
    }
    String name = observer.getClass().getName() + " " + e.getClass().getName();
    if (warned.size() < MAX_WARNED && warned.add(name)) {
      LOG.log(System.Logger.Level.WARNING, "A rate-limit observer (" + observer.getClass().getName()
          + ") failed with " + e.getClass().getName() + "; the decision stands");
    }
  }

  /**
   * The tenant and weight an upstream's call was counted under in the room's order, and its turn
   * in the store's order ({@code null} when the store keeps none).
   */
  record Served(String upstream, String tenant, double weight, @Nullable Upstream target,
      @Nullable UpstreamTurn turn) {}

  /** Corrects the orders with what a settled call used and says its upstream may admit. */
  private void settledInRoom(ModelTokenReservation handle, Consumption actual) {
    Served served = handle.served();
    if (served == null) {
      return;
    }
    UpstreamOrder o = order;
    if (o != null && served.target() != null && served.turn() != null) {
      try {
        o.settled(served.target(), served.turn(), actual.modelTokens())
            .whenComplete((ignored, failure) -> {
              if (failure != null) {
                orderFailed(served.upstream(), unwrap(failure));
              }
            });
      } catch (RuntimeException e) {
        orderFailed(served.upstream(), e);
      }
    }
    UpstreamWaitingRoom r = room;
    if (r != null) {
      r.settled(served.upstream(), served.tenant(), served.weight(), handle.estimate(),
          actual.modelTokens());
    }
    freed(served.upstream());
  }

  /**
   * Says that an upstream may admit again (a call's slots given back, its tokens settled, a
   * provider's report applied): to the room, and through the store's order to every instance.
   */
  private void freed(@Nullable String upstream) {
    if (upstream == null) {
      return;
    }
    UpstreamWaitingRoom r = room;
    UpstreamOrder o = order;
    if (r != null) {
      r.capacityMayHaveFreed(upstream);
    } else if (o != null) {
      try {
        o.signal(upstream);
      } catch (RuntimeException e) {
        orderFailed(upstream, e);
      }
    }
  }

  /** Logs that the store's order failed a settlement or a signal (its counters may lag). */
  private static void orderFailed(String upstream, Throwable e) {
    LOG.log(System.Logger.Level.WARNING, "The order of upstream '" + upstream
        + "' did not take a settlement or a signal: " + e);
  }

  /** Reconciles a reservation in the store and tells the observers; a store failure is logged. */
  void reconcile(ModelTokenReservation handle, Consumption actual) {
    try {
      store.reconcile(handle.reservation(), actual);
    } catch (RuntimeException e) {
      reconcileFailed(handle, e);
      return;
    }
    reconciled(handle, actual);
  }

  /**
   * Reconciles a reservation through the store's asynchronous API; the stage completes once it is
   * settled or its settlement was lost to a store failure (logged), never exceptionally.
   */
  CompletionStage<Void> reconcileAsync(ModelTokenReservation handle, Consumption actual) {
    CompletionStage<Void> settled;
    try {
      settled = store.reconcileAsync(handle.reservation(), actual);
    } catch (RuntimeException e) {
      reconcileFailed(handle, e);
      return CompletableFuture.completedFuture(null);
    }
    return settled.handle((ignored, failure) -> {
      if (failure != null) {
        reconcileFailed(handle, unwrap(failure));
      } else {
        reconciled(handle, actual);
      }
      return null;
    });
  }

  /** Gives back the slots of a call in the store; a store failure is logged (the leases expire). */
  void release(CallSlots slots) {
    try {
      store.release(slots.reservation());
    } catch (RuntimeException e) {
      releaseFailed(slots, e);
    }
    freed(slots.upstream());
  }

  /**
   * Gives back the slots of a call through the store's asynchronous API; the stage completes once
   * they are given back or the release was lost to a store failure (logged), never exceptionally.
   */
  CompletionStage<Void> releaseAsync(CallSlots slots) {
    CompletionStage<Void> released;
    try {
      released = store.releaseAsync(slots.reservation());
    } catch (RuntimeException e) {
      releaseFailed(slots, e);
      return CompletableFuture.completedFuture(null);
    }
    return released.handle((ignored, failure) -> {
      if (failure != null) {
        releaseFailed(slots, unwrap(failure));
      }
      freed(slots.upstream());
      return null;
    });
  }

  private static void releaseFailed(CallSlots slots, Throwable e) {
    LOG.log(System.Logger.Level.WARNING, "Could not release the slots of a call on policy '"
        + slots.policy() + "' (they free themselves when their leases expire): " + e);
  }

  /**
   * Applies what a provider's response said to its upstream's state ({@link
   * RateLimitStore#report}) and then tells the observers; a report that says nothing is applied
   * too (an answer came: it ends a probe, {@link Upstream#PROBE}), and a store failure is logged
   * (the next report corrects the state).
   *
   * @param upstream the upstream that answered
   * @param report what its response said
   * @param status the response's status (429: the provider refused the call)
   * @throws IllegalArgumentException if an argument is null
   */
  public void report(Upstream upstream, ProviderReport report, int status) {
    if (upstream == null || report == null) {
      throw new IllegalArgumentException("upstream and report must not be null");
    }
    try {
      store.report(upstream, report);
    } catch (RuntimeException e) {
      reportFailed(upstream, e);
    }
    reported(upstream, report, status);
  }

  /**
   * Applies a provider's report like {@link #report} without blocking the caller on the store; the
   * observers are told once the store has applied it (or failed to).
   *
   * @param upstream the upstream that answered
   * @param report what its response said
   * @param status the response's status
   * @return a stage that completes once the report is applied or lost (logged); it never fails
   * @throws IllegalArgumentException if an argument is null
   */
  public CompletionStage<Void> reportAsync(Upstream upstream, ProviderReport report, int status) {
    if (upstream == null || report == null) {
      throw new IllegalArgumentException("upstream and report must not be null");
    }
    CompletionStage<Void> applied;
    try {
      applied = store.reportAsync(upstream, report);
    } catch (RuntimeException e) {
      reportFailed(upstream, e);
      reported(upstream, report, status);
      return CompletableFuture.completedFuture(null);
    }
    return applied.handle((ignored, failure) -> {
      if (failure != null) {
        reportFailed(upstream, unwrap(failure));
      }
      reported(upstream, report, status);
      return null;
    });
  }

  private void reported(Upstream upstream, ProviderReport report, int status) {
    freed(upstream.name());
    for (RateLimitObserver o : observers()) {
      try {
        o.onProviderReport(upstream, report, status);
      } catch (RuntimeException e) {
        observerFailed(o, e);
      }
    }
  }

  private static void reportFailed(Upstream upstream, Throwable e) {
    LOG.log(System.Logger.Level.WARNING, "Could not apply the provider's report on upstream '"
        + upstream.name() + "': " + e);
  }

  /**
   * Returns which upstream each call goes to.
   *
   * @return the routes ({@link UpstreamRoutes#NONE} when no upstream is configured)
   */
  public UpstreamRoutes upstreamRoutes() {
    return routes;
  }

  /**
   * Returns the room where calls wait for their upstream.
   *
   * @return the room, or {@code null} when no call waits
   */
  public @Nullable UpstreamWaitingRoom waitingRoom() {
    return room;
  }

  /**
   * Returns how long each policy's calls wait for their upstream and how each plan is weighed.
   *
   * @return the rules ({@link UpstreamWaits#NONE} when none were given)
   */
  public UpstreamWaits upstreamWaits() {
    return waits;
  }

  /**
   * Returns the resolver of each key's plan.
   *
   * @return the resolver
   */
  public RateLimitPlanResolver planResolver() {
    return plans;
  }

  private void reconciled(ModelTokenReservation handle, Consumption actual) {
    settledInRoom(handle, actual);
    for (RateLimitObserver o : observers()) {
      try {
        if (handle.reservation().reserved()) {
          o.onReconcile(handle.policy(), handle.estimate(), actual.modelTokens());
        }
        if (handle.reservation().chargedQuotas()) {
          o.onSettle(handle.policy(), handle.reservation(), actual);
        }
      } catch (RuntimeException e) {
        observerFailed(o, e);
      }
    }
  }

  private static void reconcileFailed(ModelTokenReservation handle, Throwable e) {
    // the call is over: the estimate stays charged until it leaves the window
    LOG.log(System.Logger.Level.WARNING, "Could not reconcile the model tokens and quotas of a call"
        + " on policy '" + handle.policy() + "': " + e);
  }

  /**
   * Returns whether a call on some policy may be estimated before it is decided: {@link
   * #mayEstimate} of one of the policies.
   *
   * @return whether a call whose policy is not known yet may need its model-token estimate
   */
  public boolean anyMayEstimate() {
    if (!routes.isEmpty()) {
      return true;
    }
    return policies.all().values().stream().anyMatch(RateLimitEnforcer::estimates);
  }

  /**
   * Returns whether a call on a policy may be estimated before it is decided: a level limits model
   * tokens, a quota counts model tokens or cost, or an upstream (which may limit model tokens) is
   * configured. A policy that does not exist is not estimated (the call fails on it).
   *
   * @param policyName the policy's name, or {@code null} for the default policy
   * @return whether a call on it may need its model-token estimate
   */
  public boolean mayEstimate(@Nullable String policyName) {
    if (!routes.isEmpty()) {
      return true;
    }
    RateLimitPolicy policy;
    try {
      policy = policies.policy(policyName);
    } catch (IllegalArgumentException e) {
      return false;
    }
    return estimates(policy);
  }

  /** Whether a policy's calls are estimated: a level limits model tokens or a quota counts them. */
  private static boolean estimates(RateLimitPolicy policy) {
    return policy.limitsModelTokens() || policy.quotasEstimate();
  }

  /**
   * Returns the policies this enforcer applies.
   *
   * @return the policies
   */
  public RateLimitPolicies policies() {
    return policies;
  }

  /**
   * Returns the store this enforcer asks.
   *
   * @return the store
   */
  public RateLimitStore store() {
    return store;
  }

  private List<RateLimitObserver> observers() {
    List<RateLimitObserver> list = observers;
    if (list == null) {
      list = List.copyOf(observerSupplier.get());
      observers = list;
    }
    return list;
  }

  /**
   * One call: its policy, caller, plan, levels and keys, its estimate when a level limits model
   * tokens, and whether a level has quotas.
   */
  private final class Call {

    final RateLimitPolicy policy;
    final RateLimitKey key;
    final List<Budget> levels;
    final List<String> keys;
    final long estimate;
    final boolean quotas;
    final long spend;
    final String plan;
    final @Nullable Upstream upstream;
    /** The longest the call waits for its upstream under its plan; zero for none. */
    final Duration maxWait;
    final double weight;
    final int priority;
    /** Its turn in the store's order of the upstream's waiting calls; null without one. */
    final @Nullable UpstreamTurn turn;

    Call(RateLimitPolicy policy, RateLimitKey key, List<Budget> levels, List<String> keys,
        long estimate, boolean quotas, long spend, String plan, @Nullable Upstream upstream) {
      this.maxWait = upstream == null ? Duration.ZERO : waits.maxWait(policy.name(), plan);
      this.weight = waits.weight(plan);
      this.priority = waits.priority(plan);
      this.policy = policy;
      this.key = key;
      this.levels = levels;
      this.keys = keys;
      this.estimate = estimate;
      this.quotas = quotas;
      this.spend = spend;
      this.plan = plan;
      this.upstream = upstream;
      this.turn = upstream == null || order == null ? null
          : new UpstreamTurn(tenant(), weight, priority, estimate, null);
    }

    /** This call under a plan: the plan's variants of its levels. */
    Call under(String name) {
      return name.equals(plan) ? this : new Call(policy, key, policy.budgets(key, name), keys,
          estimate, quotas, spend, name, upstream);
    }

    /** Whether the call waits in the room when its upstream denies it. */
    boolean waits() {
      return room != null && upstream != null && !maxWait.isZero();
    }

    /** The tenant whose service the room counts: the root level's key. */
    String tenant() {
      return keys.get(0);
    }

    /** The upstream's deny of a call that left the room without being decided. */
    RateLimitOutcome upstreamDeny(long retryAfterMs) {
      assert upstream != null;
      long wait = Math.max(1, retryAfterMs);
      return new RateLimitOutcome(policy, key, Decision.retryableDeny(Reason.UPSTREAM_LIMIT, 0,
          wait, wait, upstream.budget().name()), levels, false, null, null, plan, null, null,
          upstream);
    }

    /** What the call is estimated to consume, for its quotas. */
    Consumption consumption() {
      return new Consumption(1, estimate, spend);
    }

    RateLimitOutcome outcome(Reservation r) {
      boolean settles = r.reserved() || r.chargedQuotas();
      ModelTokenReservation handle = settles
          ? new ModelTokenReservation(RateLimitEnforcer.this, policy.name(), r, key.model(),
              upstream == null ? null
                  : new Served(upstream.name(), tenant(), weight, upstream, turn)) : null;
      CallSlots slots = r.holdsSlots() ? new CallSlots(RateLimitEnforcer.this, policy.name(), r,
          upstream == null ? null : upstream.name()) : null;
      Decision shadow = shadowDeny(r.decision());
      if (shadow == null && r.decision().allowed()) {
        shadow = shadowQuota(r);
      }
      return new RateLimitOutcome(policy, key, shadow != null && r.decision().denied()
          ? admitted(shadow) : r.decision(), levels, false, r, handle, plan, slots, shadow,
          upstream);
    }

    /** The store's deny when the policy is in shadow mode (a store that cannot decide denies). */
    private @Nullable Decision shadowDeny(Decision d) {
      return d.denied() && !policy.enforce() && d.reason() != Reason.STORE_UNAVAILABLE
          && d.reason() != Reason.UPSTREAM_LIMIT ? d : null;
    }
  }

  /** The admitted decision of a call its policy lets through in shadow mode. */
  private static Decision admitted(Decision deny) {
    return Decision.allow(0, deny.resetAfterMs(), deny.level());
  }

  /**
   * The deny an admitted call would have had from the first shadow quota it exceeded, or null: a
   * retryable {@link Reason#QUOTA_EXCEEDED} until that quota's period ends.
   */
  private static @Nullable Decision shadowQuota(Reservation r) {
    for (QuotaStatus q : r.quotas()) {
      if (q.exceeded()) {
        long retry = r.quotaAtMs() > 0 ? q.resetMs(r.quotaAtMs())
            : Math.max(1, q.periodEndMs() - q.periodStartMs());
        return Decision.retryableDeny(Reason.QUOTA_EXCEEDED, 0, retry, retry, q.level());
      }
    }
    return null;
  }
}
