package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.List;
import java.util.function.Predicate;

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
 */
public record Reservation(
    Decision decision,
    List<Budget> levels,
    List<String> keys,
    long estimate,
    long id,
    long remainingModelTokens,
    long modelTokensResetMs) {

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
    if (id != 0 && !decision.allowed()) {
      throw new IllegalArgumentException("a denied call reserves nothing, but id was " + id);
    }
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
