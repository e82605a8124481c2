package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Where budgets keep their per-key state, and the one place a decision is taken atomically.
 *
 * <p>A store decides for a list of levels at once (a hierarchy), each level a {@link Budget} with
 * its own key: in {@link Composition#SEQUENTIAL} the levels and, within each, the concurrency
 * check, the window, the bucket and the model tokens run in order, and what ran before a deny
 * stays charged; in {@link Composition#RESERVE_COMMIT} all are checked before any is charged. No
 * other caller of the same keys interleaves with a decision. The {@linkplain #inMemory() in-memory
 * store} is the default; other modules add distributed ones that give the same results.
 *
 * <p>A level's state belongs to its budget's name: a {@linkplain Budget#variant variant} of a
 * budget (a tenant's plan) decides on the same state with its own limits, by the rules stated on
 * {@link Budget}. Two budgets of one name must have the same {@linkplain Budget#defaults()
 * defaults}, or the store throws an {@link IllegalArgumentException}.
 *
 * <p>A budget with a {@link ConcurrencyLimit} is called with {@link #reserve}: an admitted call
 * takes one slot at every level that limits concurrency, in the same atomic step as the rest of
 * the decision, and holds it until {@link #release} or until its lease expires on the store's
 * clock. A slot is taken only when the whole call is admitted (a denied call never runs, so it
 * would never give a slot back): within a level the concurrency check runs first, so a {@link
 * Reason#CONCURRENCY_LIMIT} deny charges nothing at its level.
 *
 * <p>This interface holds decisions only. A store that keeps plans assigned to keys offers them
 * through {@link #planAssignments()}, and one whose per-key state can be read and reset through
 * {@link #administration()}; the in-memory store and the Redis store offer both. The in-memory
 * store also saves its quota counters to a file and reads them back through {@link
 * #quotaPersistence()}.
 */
public interface RateLimitStore extends AutoCloseable {

  /**
   * Decides one call across the given levels and charges what the composition says.
   *
   * @param levels the budgets, root first; names distinct
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive (the window counts 1)
   * @param composition the composition mode
   * @return the decision; a deny names the level that denied. A cost above a level's bucket
   *     capacity is refused with {@link Reason#COST_EXCEEDS_CAPACITY} before any state is read:
   *     nothing charged, {@code remaining} 0 and {@code resetAfterMs} 0
   * @throws IllegalArgumentException on a blank key, a bad cost, mismatched lists, duplicate names,
   *     or a level that limits concurrency (call {@link #reserve}, whose reservation releases the
   *     slot)
   */
  Decision acquire(List<Budget> levels, List<String> keys, double cost, Composition composition);

  /**
   * Decides one call on a single budget.
   *
   * @param budget the budget
   * @param key the key, not blank
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param composition the composition mode
   * @return the decision
   * @throws IllegalArgumentException on a blank key, a bad cost or a budget that limits
   *     concurrency
   */
  default Decision acquire(Budget budget, String key, double cost, Composition composition) {
    return acquire(List.of(budget), List.of(key), cost, composition);
  }

  /**
   * Decides one call like {@link #acquire(List, List, double, Composition)} and, at every level
   * with a {@link ModelTokenLimit}, also checks and reserves the call's estimated model tokens,
   * and at every level with a {@link ConcurrencyLimit}, checks and takes a slot.
   *
   * <p>The model-token window runs after the request window and the bucket, under the same lock
   * (the same atomic step in a distributed store): in sequential composition a {@link
   * Reason#TPM_LIMIT} deny leaves the request timestamp and the bucket debit charged; in
   * reserve-then-commit composition it charges nothing. An estimate above a level's model-token
   * limit is denied with {@link Reason#COST_EXCEEDS_CAPACITY} before any state is read, as a cost
   * above a level's bucket capacity is: nothing charged, {@code remaining} 0 and {@code
   * resetAfterMs} 0.
   *
   * <p>The concurrency check runs first within each level: slots all held deny with {@link
   * Reason#CONCURRENCY_LIMIT} before the level's window, and the slots are taken only once every
   * level has admitted the call. Give them back with {@link #release} when the call ends.
   *
   * @param levels the budgets, root first; names distinct
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param estimatedModelTokens the model tokens the call is expected to use, at least 0
   * @param composition the composition mode
   * @return the decision with what was reserved
   * @throws IllegalArgumentException on a blank key, a bad cost or estimate, or mismatched lists
   */
  Reservation reserve(
      List<Budget> levels,
      List<String> keys,
      double cost,
      long estimatedModelTokens,
      Composition composition);

  /**
   * Decides one call like {@link #reserve(List, List, double, long, Composition)} and also checks
   * and charges the {@linkplain QuotaLimit quotas} of every level, in the same atomic step: each
   * quota counts the estimate's amount in its unit (1 request, the model tokens, or the cost) in
   * the calendar period that holds the store's current time.
   *
   * <p>The quotas run last within a level. An enforced quota whose period has too little left for
   * the estimate (its use counts the estimates of the key's calls in flight until they are
   * settled) denies with {@link Reason#QUOTA_EXCEEDED}, retryable once the period ends (the wait is
   * exactly the time until then), or after 1 s when only those estimates do not fit: in reserve-then-commit composition nothing is charged
   * anywhere; in sequential composition what ran before it stays charged, the quota itself is not
   * charged. A shadow quota ({@code enforce} false) never denies and is charged like an enforced
   * one. An estimate above an enforced quota's limit is refused with {@link
   * Reason#COST_EXCEEDS_CAPACITY} before any state is read. The reservation reports where every
   * quota stands ({@link Reservation#quotas()}), with the thresholds this decision crossed first.
   * Settle it with {@link #reconcile(Reservation, Consumption)} once the call ends.
   *
   * @param levels the budgets, root first; names distinct
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param estimate what the call is expected to consume: 1 request, its model tokens, its cost
   * @param composition the composition mode
   * @return the decision with what was reserved
   * @throws IllegalArgumentException on a blank key, a bad cost or estimate, or mismatched lists
   * @throws UnsupportedOperationException if a level has a quota and this store keeps none
   */
  default Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition) {
    requireNoQuotas(levels);
    return reserve(levels, keys, cost, estimate.modelTokens(), composition);
  }

  /**
   * Decides one call and charges its quotas like {@link #reserve(List, List, double, Consumption,
   * Composition)} without blocking the caller on I/O (see {@link #acquireAsync}).
   *
   * @param levels the budgets, root first; names distinct
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param estimate what the call is expected to consume
   * @param composition the composition mode
   * @return a stage that completes with the decision and what was reserved
   * @throws IllegalArgumentException on bad input, before anything is asked of the store
   */
  default CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition) {
    return CompletableFuture.completedFuture(reserve(levels, keys, cost, estimate, composition));
  }

  /**
   * Settles a reservation with what the call consumed: its model tokens as {@link
   * #reconcile(Reservation, long)} does, and at every quota it charged, the estimate replaced by
   * the actual amount in the period it was charged in (a call that failed is settled with {@link
   * Consumption#NONE}: its request, tokens and cost are all refunded). Call it once per
   * reservation; a reservation that charged nothing is ignored.
   *
   * @param reservation what {@code reserve} returned
   * @param actual what the call consumed
   * @throws IllegalArgumentException if an argument is null
   * @throws UnsupportedOperationException if the reservation charged quotas and this store keeps
   *     none
   */
  default void reconcile(Reservation reservation, Consumption actual) {
    if (reservation.chargedQuotas()) {
      throw new UnsupportedOperationException(getClass().getName() + " keeps no quotas");
    }
    reconcile(reservation, actual.modelTokens());
  }

  /**
   * Settles a reservation like {@link #reconcile(Reservation, Consumption)} without blocking the
   * caller on I/O.
   *
   * @param reservation what {@code reserve} or {@code reserveAsync} returned
   * @param actual what the call consumed
   * @return a stage that completes once the reservation is settled (or its settlement is lost to a
   *     store failure)
   * @throws IllegalArgumentException if an argument is null
   */
  default CompletionStage<Void> reconcileAsync(Reservation reservation, Consumption actual) {
    reconcile(reservation, actual);
    return CompletableFuture.completedFuture(null);
  }

  /**
   * Decides one call like {@link #reserve(List, List, double, Consumption, Composition)} and also
   * checks and charges the {@link Upstream} the call goes to, in the same atomic step, for every
   * caller of the store (on a distributed store, across every instance).
   *
   * <p>The caller's levels are decided first, exactly as without an upstream: when one of them
   * denies, the decision is the one {@code reserve} without an upstream gives (with what a
   * sequential deny charges), and the upstream is neither charged nor reported. When they all
   * admit the call, the upstream decides it: its window counts 1 request, its model tokens the
   * estimate's model tokens, its concurrency one slot, and the provider's last {@linkplain
   * #report report} applies (a closed upstream or a reported remaining count too small denies). An
   * upstream deny is {@link Reason#UPSTREAM_LIMIT}, naming the upstream's {@linkplain
   * Upstream#budget() budget} as its level, and charges nothing at any level, whatever the
   * composition: the caller may wait and try again at no cost to its own budgets. An estimate
   * above the upstream's model-token limit is refused with {@link Reason#COST_EXCEEDS_CAPACITY}
   * before any state is read. An admitted call's reservation carries the upstream's budget as its
   * last level, its key the upstream's name, so that {@link #reconcile(Reservation, Consumption)}
   * settles the upstream's model tokens and {@link #release} frees its slot.
   *
   * @param levels the caller's budgets, root first; names distinct, none an upstream's
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param estimate what the call is expected to consume
   * @param composition the composition mode of the caller's levels
   * @param upstream the upstream the call goes to
   * @return the decision with what was reserved
   * @throws IllegalArgumentException on bad input, as {@code reserve}, or a level whose budget is an
   *     upstream's
   * @throws UnsupportedOperationException if this store keeps no upstreams
   */
  default Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream) {
    throw new UnsupportedOperationException(getClass().getName() + " keeps no upstreams");
  }

  /**
   * Decides one call and its upstream like {@link #reserve(List, List, double, Consumption,
   * Composition, Upstream)} without blocking the caller on I/O.
   *
   * @param levels the caller's budgets, root first
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param estimate what the call is expected to consume
   * @param composition the composition mode of the caller's levels
   * @param upstream the upstream the call goes to
   * @return a stage that completes with the decision and what was reserved
   * @throws IllegalArgumentException on bad input, before anything is asked of the store
   */
  default CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream) {
    return CompletableFuture.completedFuture(
        reserve(levels, keys, cost, estimate, composition, upstream));
  }

  /**
   * Decides one call and its upstream like {@link #reserve(List, List, double, Consumption,
   * Composition, Upstream)}, in the fair order of the calls that wait for the upstream ({@link
   * #upstreamOrder()}): when the caller's levels admit the call and calls wait for the upstream,
   * only the turn that names the first waiting call may be admitted, every other turn is denied
   * {@link Reason#UPSTREAM_LIMIT} charging nothing (its wait: the upstream's own when it has no
   * room either, else the order's {@linkplain UpstreamOrder#pollInterval() poll interval}); an
   * admitted waiting call leaves the order in the same atomic step and its estimate is counted in
   * its tenant's counter, any other admitted call's in its class's last-left counter ({@link
   * UpstreamOrder}). A store without an order ignores the turn.
   *
   * @param levels the caller's budgets, root first; names distinct, none an upstream's
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param estimate what the call is expected to consume
   * @param composition the composition mode of the caller's levels
   * @param upstream the upstream the call goes to
   * @param turn the call's place in the upstream's order
   * @return the decision with what was reserved
   * @throws IllegalArgumentException on bad input, as {@code reserve}
   * @throws UnsupportedOperationException if this store keeps no upstreams
   */
  default Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream, UpstreamTurn turn) {
    Args.notNull("turn", turn);
    return reserve(levels, keys, cost, estimate, composition, upstream);
  }

  /**
   * Decides one call in its upstream's fair order like {@link #reserve(List, List, double,
   * Consumption, Composition, Upstream, UpstreamTurn)} without blocking the caller on I/O.
   *
   * @param levels the caller's budgets, root first
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param estimate what the call is expected to consume
   * @param composition the composition mode of the caller's levels
   * @param upstream the upstream the call goes to
   * @param turn the call's place in the upstream's order
   * @return a stage that completes with the decision and what was reserved
   * @throws IllegalArgumentException on bad input, before anything is asked of the store
   */
  default CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream,
      UpstreamTurn turn) {
    Args.notNull("turn", turn);
    return reserveAsync(levels, keys, cost, estimate, composition, upstream);
  }

  /**
   * Returns the fair order of the calls that wait for this store's upstreams, shared by every
   * caller of the store, or {@code null} when the store keeps none (each caller then orders its
   * own waiting calls).
   *
   * @return the order, or {@code null}
   */
  default @Nullable UpstreamOrder upstreamOrder() {
    return null;
  }

  /**
   * Applies what the provider reported in a response to the upstream's state, for every caller of
   * the store, by the rules on {@link ProviderReport}.
   *
   * @param upstream the upstream that answered
   * @param report what its response said
   * @throws IllegalArgumentException if an argument is null
   * @throws UnsupportedOperationException if this store keeps no upstreams
   */
  default void report(Upstream upstream, ProviderReport report) {
    throw new UnsupportedOperationException(getClass().getName() + " keeps no upstreams");
  }

  /**
   * Applies a provider's report like {@link #report} without blocking the caller on I/O.
   *
   * @param upstream the upstream that answered
   * @param report what its response said
   * @return a stage that completes once the report is applied (or lost to a store failure)
   * @throws IllegalArgumentException if an argument is null
   */
  default CompletionStage<Void> reportAsync(Upstream upstream, ProviderReport report) {
    report(upstream, report);
    return CompletableFuture.completedFuture(null);
  }

  /**
   * Reads where an upstream stands, charging nothing.
   *
   * @param upstream the upstream
   * @return its status now
   * @throws IllegalArgumentException if the argument is null
   * @throws UnsupportedOperationException if this store keeps no upstreams
   */
  default UpstreamStatus upstreamStatus(Upstream upstream) {
    throw new UnsupportedOperationException(getClass().getName() + " keeps no upstreams");
  }

  /** Throws if a level has a quota: for stores that keep none. */
  private void requireNoQuotas(List<Budget> levels) {
    for (Budget b : levels) {
      if (!b.quotas().isEmpty()) {
        throw new UnsupportedOperationException(getClass().getName() + " keeps no quotas, but"
            + " budget '" + b.name() + "' has " + b.quotas());
      }
    }
  }

  /**
   * Replaces a reservation's estimate with the model tokens the call actually used, at every level.
   *
   * <p>While the reservation's entry is still in a level's window its amount becomes {@code
   * actualModelTokens}, refunding an over-estimate or charging an under-estimate in the same entry.
   * Once it has left the window, an under-estimate is charged as a new entry at the current time
   * and an over-estimate has nothing left to refund. A failed call is reconciled with 0, which
   * refunds the whole estimate (its request-window slot stays charged). Call it once per
   * reservation; a reservation that reserved nothing is ignored.
   *
   * <p>Its quotas that count model tokens are settled with {@code actualModelTokens}; those that
   * count requests or cost keep the estimate (settle them with {@link #reconcile(Reservation,
   * Consumption)}).
   *
   * @param reservation what {@link #reserve} returned
   * @param actualModelTokens the model tokens used, at least 0
   * @throws IllegalArgumentException if the usage is negative
   */
  void reconcile(Reservation reservation, long actualModelTokens);

  /**
   * Charges model tokens used outside a decided call, after the fact: usage learned later, such as
   * a batch job's or a tool call's. At every level that limits model tokens, {@code modelTokens}
   * are added to the key's model-token window as one entry at the current time, in one atomic step
   * (one script call in a distributed store); nothing else is charged: no request-window slot, no
   * bucket permit, no slot for a call in flight. It never denies (the tokens are already spent): a
   * window it takes past its limit denies the key's next calls with {@link Reason#TPM_LIMIT} until
   * enough of it has left. Levels without a model-token limit are left alone, and a charge of 0
   * does nothing. A level that cannot track one more key ({@link Reason#TRACKED_KEYS_LIMIT}) is
   * not charged.
   *
   * @param levels the budgets, root first; names distinct
   * @param keys one key per level, in the same order
   * @param modelTokens the model tokens used, at least 0
   * @throws IllegalArgumentException on a blank key, negative tokens, mismatched lists or duplicate
   *     names
   */
  void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens);

  /**
   * Charges model tokens used outside a decided call like {@link #chargeModelTokens} without
   * blocking the caller on I/O.
   *
   * @param levels the budgets, root first; names distinct
   * @param keys one key per level, in the same order
   * @param modelTokens the model tokens used, at least 0
   * @return a stage that completes once the tokens are charged (or the charge is lost to a store
   *     failure, as with {@link #reconcile})
   * @throws IllegalArgumentException on bad input, before anything is asked of the store
   */
  default CompletionStage<Void> chargeModelTokensAsync(
      List<Budget> levels, List<String> keys, long modelTokens) {
    chargeModelTokens(levels, keys, modelTokens);
    return CompletableFuture.completedFuture(null);
  }

  /**
   * Gives back the slots a reservation holds for a call in flight, at every level that limits
   * concurrency: the call has ended. Idempotent: a second release of the same reservation, a
   * release of a lease that has expired already, and of a reservation that holds no slot, do
   * nothing. Only this reservation's slots are freed, never another call's.
   *
   * @param reservation what {@link #reserve} returned
   * @throws IllegalArgumentException if the reservation is null
   */
  void release(Reservation reservation);

  /**
   * Gives back a reservation's slots like {@link #release} without blocking the caller on I/O.
   *
   * @param reservation what {@link #reserve} or {@link #reserveAsync} returned
   * @return a stage that completes once the slots are given back (or the release is lost to a
   *     store failure, as with {@link #release}, and the leases expire by themselves)
   * @throws IllegalArgumentException if the reservation is null
   */
  default CompletionStage<Void> releaseAsync(Reservation reservation) {
    release(reservation);
    return CompletableFuture.completedFuture(null);
  }

  /**
   * Decides one call like {@link #acquire(List, List, double, Composition)} without blocking the
   * caller on I/O: a store that decides in memory completes the stage at once, a distributed store
   * when its server (or its failure policy) answers. A reactive front door calls this on an event
   * loop.
   *
   * @param levels the budgets, root first; names distinct
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param composition the composition mode
   * @return a stage that completes with the decision
   * @throws IllegalArgumentException on bad input, before anything is asked of the store
   */
  default CompletionStage<Decision> acquireAsync(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    return CompletableFuture.completedFuture(acquire(levels, keys, cost, composition));
  }

  /**
   * Decides one call and reserves its model tokens like {@link #reserve} without blocking the
   * caller on I/O (see {@link #acquireAsync}).
   *
   * @param levels the budgets, root first; names distinct
   * @param keys one key per level, in the same order
   * @param cost the call's cost in bucket tokens, finite and positive
   * @param estimatedModelTokens the model tokens the call is expected to use, at least 0
   * @param composition the composition mode
   * @return a stage that completes with the decision and what was reserved
   * @throws IllegalArgumentException on bad input, before anything is asked of the store
   */
  default CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, long estimatedModelTokens, Composition composition) {
    return CompletableFuture.completedFuture(
        reserve(levels, keys, cost, estimatedModelTokens, composition));
  }

  /**
   * Reconciles a reservation like {@link #reconcile} without blocking the caller on I/O.
   *
   * @param reservation what {@link #reserve} or {@link #reserveAsync} returned
   * @param actualModelTokens the model tokens used, at least 0
   * @return a stage that completes once the reservation is settled (or its settlement is lost to a
   *     store failure, as with {@link #reconcile})
   * @throws IllegalArgumentException if the usage is negative
   */
  default CompletionStage<Void> reconcileAsync(Reservation reservation, long actualModelTokens) {
    reconcile(reservation, actualModelTokens);
    return CompletableFuture.completedFuture(null);
  }

  /**
   * Returns the plans this store keeps assigned to keys, if it keeps any. Stores that share their
   * state share their assignments; a store that decorates another returns the other's.
   *
   * @return the store's plan assignments, or empty when it keeps none (every key then has the
   *     default plan)
   */
  default Optional<PlanAssignments> planAssignments() {
    return Optional.empty();
  }

  /**
   * Returns the administration of this store's per-key state (inspect, list the busiest keys,
   * reset), if it offers one. A store that decorates another returns the other's, or its own that
   * reads the same state.
   *
   * @return the store's administration, or empty when its state cannot be read or reset from here
   */
  default Optional<StoreAdministration> administration() {
    return Optional.empty();
  }

  /**
   * Returns how this store's quota counters are saved to a file and read back, if it keeps them in
   * this process only. The in-memory store offers it, so that its quotas survive a restart; a store
   * whose state lives on a server (Redis) keeps its quotas there and offers none.
   *
   * @return the store's quota persistence, or empty when its quotas need none or it keeps none
   */
  default Optional<QuotaPersistence> quotaPersistence() {
    return Optional.empty();
  }

  /**
   * Releases the store's resources: the in-memory store stops its scheduled maintenance (and keeps
   * deciding calls); closing twice does nothing more.
   */
  @Override
  default void close() {}

  /**
   * Returns a new in-memory store on the system ticker, tracking at most {@value
   * InMemoryStore#DEFAULT_MAX_KEYS} keys per budget, maintained every second on the shared
   * maintenance thread.
   *
   * @return a new in-memory store
   */
  static RateLimitStore inMemory() {
    return inMemory(Ticker.system());
  }

  /**
   * Returns a new in-memory store that reads time from {@code ticker}, maintained every second on
   * the shared maintenance thread.
   *
   * @param ticker the time source
   * @return a new in-memory store
   */
  static RateLimitStore inMemory(Ticker ticker) {
    return inMemory(ticker, InMemoryStore.DEFAULT_MAX_KEYS);
  }

  /**
   * Returns a new in-memory store with a cap on tracked keys per budget, maintained every second
   * on the shared maintenance thread.
   *
   * @param ticker the time source
   * @param maxKeysPerBudget the most keys tracked per budget, at least 1
   * @return a new in-memory store
   * @see #inMemory(Ticker, long, MaintenanceScheduler)
   */
  static RateLimitStore inMemory(Ticker ticker, long maxKeysPerBudget) {
    return inMemory(ticker, maxKeysPerBudget,
        MaintenanceScheduler.every(InMemoryStore.DEFAULT_MAINTENANCE_INTERVAL));
  }

  /**
   * Returns a new in-memory store with a cap on tracked keys per budget, maintained by {@code
   * scheduler}.
   *
   * <p>Calls do no housekeeping: each run of the maintenance task examines at most {@value
   * InMemoryStore#DEFAULT_MAINTENANCE_STEP} tracked keys across the store's budgets, continuing
   * where the last run stopped. It drops each examined key whose state equals a fresh one (which
   * never grants budget: a bucket that does not refill and was charged is never dropped) and ranks
   * the busiest for {@link StoreAdministration#top}. A key that is fresh is dropped, and {@link
   * StoreAdministration#trackedKeys} counts it no more, within {@code 2 * ceil(T / 100,000) + 2}
   * runs, {@code T} being the most keys the store tracked meanwhile (with the default scheduler,
   * one run a second). A run skips a budget whose own step is under way on a caller's thread (see
   * below), which may add a round over the other budgets.
   *
   * <p>When a budget tracks {@code maxKeysPerBudget} keys, a call with a new key runs one step of
   * at most 1,000 keys of that budget at once; if the budget is still full, the call is denied
   * with {@link Reason#TRACKED_KEYS_LIMIT} (retryable) while every tracked key keeps its state: an
   * active tenant's budget is never reset to make room.
   *
   * <p>Quota counters (per key, quota and period) are kept until a day after their period ends, at
   * most {@code 4 * maxKeysPerBudget} of them: a call whose new counter finds that many is denied
   * with {@link Reason#TRACKED_KEYS_LIMIT} too, nothing charged, until the counters of periods long
   * over are dropped.
   *
   * @param ticker the time source
   * @param maxKeysPerBudget the most keys tracked per budget, at least 1
   * @param scheduler what runs the maintenance, such as {@link MaintenanceScheduler#every}
   * @return a new in-memory store
   * @throws IllegalArgumentException if an argument is null or the cap is below 1
   */
  static RateLimitStore inMemory(
      Ticker ticker, long maxKeysPerBudget, MaintenanceScheduler scheduler) {
    return InMemoryStore.maintained(ticker, maxKeysPerBudget, scheduler);
  }

  /**
   * Returns a new in-memory store like {@link #inMemory(Ticker, long, MaintenanceScheduler)} whose
   * quotas follow the calendar of {@code wallClock} (the system's clock otherwise): a test drives
   * both clocks.
   *
   * @param ticker the time source of windows, buckets and leases
   * @param wallClock the clock of quota periods
   * @param maxKeysPerBudget the most keys tracked per budget, at least 1
   * @param scheduler what runs the maintenance
   * @return a new in-memory store
   * @throws IllegalArgumentException if an argument is null or the cap is below 1
   */
  static RateLimitStore inMemory(Ticker ticker, InstantSource wallClock, long maxKeysPerBudget,
      MaintenanceScheduler scheduler) {
    return InMemoryStore.maintained(ticker, wallClock, maxKeysPerBudget, scheduler);
  }
}
