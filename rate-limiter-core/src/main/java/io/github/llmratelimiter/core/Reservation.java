package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The outcome of {@link RateLimitStore#reserve}: the decision, and when allowed, the model tokens
 * reserved at every level with a {@link ModelTokenLimit}, to be {@linkplain
 * RateLimitStore#reconcile reconciled} with the actual usage once the call ends, and the slot
 * taken at every level with a {@link ConcurrencyLimit}, to be {@linkplain RateLimitStore#release
 * released} once the call ends.
 *
 * <p>A reservation is a value: the store finds what it holds by its {@link #id()}, so releasing
 * or reconciling it needs nothing else, from any thread, and a second release of it does nothing.
 *
 * @param decision the decision on the call
 * @param levels the budgets, root first
 * @param keys one key per level
 * @param estimate the model tokens reserved (the estimate)
 * @param id identifies the reservation's model-token entries and slots in the store; 0 when
 *     nothing was reserved (a deny, no level limits model tokens or concurrency, or a store that
 *     could not decide answered without charging anything)
 * @param remainingModelTokens model tokens still admitted now, the minimum over the levels that
 *     limit them ({@link Long#MAX_VALUE} when none does)
 * @param modelTokensResetMs milliseconds until the model-token windows are empty (0 when no level
 *     limits model tokens)
 * @param estimatedSpend the cost reserved at the quotas that count it, micro-units
 * @param quotaAtMs the instant (epoch milliseconds) at which the quotas were charged: the period
 *     they were charged in, which {@code reconcile} settles (of a call refused before any state
 *     was read, {@link Reason#COST_EXCEEDS_CAPACITY}, the instant whose periods refused it; 0 when
 *     no level has a quota)
 * @param quotas where every quota of every level stands after the decision, root first, in each
 *     level's order (empty when no level has a quota, or the store did not read them)
 * @param components what each component of every level admits after the decision, root first,
 *     one per level: the window, the bucket, the slots and the model tokens each on its own
 *     (empty when the store read no state: a cost or an estimate that never fits, a table full,
 *     a store that could not decide)
 */
public record Reservation(
    Decision decision,
    List<Budget> levels,
    List<String> keys,
    long estimate,
    long id,
    long remainingModelTokens,
    long modelTokensResetMs,
    long estimatedSpend,
    long quotaAtMs,
    List<QuotaStatus> quotas,
    List<LevelRemaining> components) {

  /**
   * Validates the reservation.
   *
   * @throws IllegalArgumentException on null parts, mismatched lists or negative counts
   */
  public Reservation {
    Args.notNull("decision", decision);
    levels = List.copyOf(Args.notNull("levels", levels));
    keys = List.copyOf(Args.notNull("keys", keys));
    if (levels.size() != keys.size()) {
      throw new IllegalArgumentException(
          "keys must have one key per level (" + levels.size() + "), but had " + keys.size());
    }
    Args.notNegative("estimate", estimate);
    Args.notNegative("id", id);
    Args.notNegative("remainingModelTokens", remainingModelTokens);
    Args.notNegative("modelTokensResetMs", modelTokensResetMs);
    Args.notNegative("estimatedSpend", estimatedSpend);
    quotas = List.copyOf(Args.notNull("quotas", quotas));
    components = List.copyOf(Args.notNull("components", components));
    if (!components.isEmpty() && components.size() != levels.size()) {
      throw new IllegalArgumentException("components must be empty or one per level ("
          + levels.size() + "), but had " + components.size());
    }
    if (id != 0 && !decision.allowed()) {
      throw new IllegalArgumentException("a denied call reserves nothing, but id was " + id);
    }
  }

  /**
   * Returns a reservation without the components' figures.
   *
   * @param decision the decision on the call
   * @param levels the budgets, root first
   * @param keys one key per level
   * @param estimate the model tokens reserved
   * @param id the reservation's number, 0 when nothing was reserved
   * @param remainingModelTokens model tokens still admitted now
   * @param modelTokensResetMs milliseconds until the model-token windows are empty
   * @param estimatedSpend the cost reserved at the quotas that count it, micro-units (of a call
   *     refused before any state was read, {@link Reason#COST_EXCEEDS_CAPACITY}, what its levels'
   *     quotas would have been charged, of which nothing is reserved; 0 without quotas)
   * @param quotaAtMs the instant at which the quotas were charged, epoch milliseconds
   * @param quotas where every quota of every level stands after the decision
   */
  public Reservation(Decision decision, List<Budget> levels, List<String> keys, long estimate,
      long id, long remainingModelTokens, long modelTokensResetMs, long estimatedSpend,
      long quotaAtMs, List<QuotaStatus> quotas) {
    this(decision, levels, keys, estimate, id, remainingModelTokens, modelTokensResetMs,
        estimatedSpend, quotaAtMs, quotas, List.of());
  }

  /**
   * Returns a reservation without quotas.
   *
   * @param decision the decision on the call
   * @param levels the budgets, root first
   * @param keys one key per level
   * @param estimate the model tokens reserved
   * @param id the reservation's number, 0 when nothing was reserved
   * @param remainingModelTokens model tokens still admitted now
   * @param modelTokensResetMs milliseconds until the model-token windows are empty
   */
  public Reservation(Decision decision, List<Budget> levels, List<String> keys, long estimate,
      long id, long remainingModelTokens, long modelTokensResetMs) {
    this(decision, levels, keys, estimate, id, remainingModelTokens, modelTokensResetMs, 0, 0,
        List.of(), List.of());
  }

  /**
   * Returns what the components of level {@code i} admit after the decision, or {@code null} when
   * the store reported none ({@link #components()} empty).
   *
   * @param i the level's index, root first
   * @return the level's figures, or {@code null}
   * @throws IndexOutOfBoundsException if {@code i} is not a level's index
   */
  public @Nullable LevelRemaining components(int i) {
    Objects.checkIndex(i, levels.size());
    return components.isEmpty() ? null : components.get(i);
  }

  /**
   * Returns what this call reserved at its quotas: one request, its estimated model tokens and
   * its estimated cost.
   *
   * @return the estimate
   */
  public Consumption estimated() {
    return new Consumption(1, estimate, estimatedSpend);
  }

  /**
   * Returns whether the call holds quota charges that {@code reconcile} settles.
   *
   * @return whether {@code id() != 0} and some level has a quota
   */
  public boolean chargedQuotas() {
    return holdsAt(b -> !b.quotas().isEmpty());
  }

  /**
   * Returns whether the store holds model tokens for this call that {@code reconcile} adjusts.
   *
   * @return whether {@code id() != 0} and some level limits model tokens
   */
  public boolean reserved() {
    return holdsAt(b -> b.modelTokens() != null);
  }

  /**
   * Returns whether the call holds slots for calls in flight that {@code release} gives back.
   *
   * @return whether {@code id() != 0} and some level limits concurrency
   */
  public boolean holdsSlots() {
    return holdsAt(b -> b.concurrency() != null);
  }

  /** Whether something was reserved and some level limits it. */
  private boolean holdsAt(Predicate<Budget> limits) {
    if (id != 0) {
      for (Budget b : levels) {
        if (limits.test(b)) {
          return true;
        }
      }
    }
    return false;
  }
}
