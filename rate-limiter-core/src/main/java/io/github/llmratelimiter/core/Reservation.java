package io.github.llmratelimiter.core;

import java.util.List;

/**
 * The outcome of {@link RateLimitStore#reserve}: the decision, and when allowed, the model tokens
 * reserved at every level with a {@link ModelTokenLimit}, to be {@linkplain
 * RateLimitStore#reconcile reconciled} with the actual usage once the call ends.
 *
 * @param decision the decision on the call
 * @param levels the budgets, root first
 * @param keys one key per level
 * @param estimate the model tokens reserved (the estimate)
 * @param id identifies the reservation's window entries in the store; 0 when nothing was reserved
 *     (a deny, or no level limits model tokens)
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
   * @return {@code id() != 0}
   */
  public boolean reserved() {
    return id != 0;
  }
}
