package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reservation;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A decision together with what it was taken on: the policy, the caller and the levels.
 *
 * @param policy the policy applied
 * @param key the caller
 * @param decision the store's decision
 * @param levels the budgets decided on, root first
 * @param degraded whether the store failed and the call was let through by {@code
 *     ratelimiter.store-failure=allow} (the decision then reflects no budget)
 * @param reservation the store's answer on the model-token (TPM) budgets, or {@code null} when no
 *     level limits model tokens (or the outcome is degraded)
 * @param modelTokens the handle that settles the model tokens an allowed call reserved, or {@code
 *     null} when it reserved none
 * @param plan the plan the call was decided under: its levels are the plan's variants of the
 *     policy's budgets
 * @param slots the handle that gives back the slots an allowed call took on limits on calls in
 *     flight, or {@code null} when it took none
 */
public record RateLimitOutcome(
    RateLimitPolicy policy,
    RateLimitKey key,
    Decision decision,
    List<Budget> levels,
    boolean degraded,
    @Nullable Reservation reservation,
    @Nullable ModelTokenReservation modelTokens,
    String plan,
    @Nullable CallSlots slots) {

  /**
   * Validates the outcome.
   *
   * @throws IllegalArgumentException if an argument is null or the levels are empty
   */
  public RateLimitOutcome {
    if (policy == null || key == null || decision == null || levels == null || levels.isEmpty()
        || plan == null) {
      throw new IllegalArgumentException(
          "policy, key, decision, levels and plan must be set, levels not empty");
    }
    levels = List.copyOf(levels);
  }

  /**
   * Returns an outcome under the policy's default plan that holds no slots.
   *
   * @param policy the policy applied
   * @param key the caller
   * @param decision the store's decision
   * @param levels the budgets decided on, root first
   * @param degraded whether the store failed and the call was let through
   * @param reservation the store's answer on the model-token budgets, or {@code null}
   * @param modelTokens the handle that settles reserved model tokens, or {@code null}
   */
  public RateLimitOutcome(RateLimitPolicy policy, RateLimitKey key, Decision decision,
      List<Budget> levels, boolean degraded, @Nullable Reservation reservation,
      @Nullable ModelTokenReservation modelTokens) {
    this(policy, key, decision, levels, degraded, reservation, modelTokens,
        policy == null ? "" : policy.defaultPlan(), null);
  }

  /**
   * Returns an outcome on budgets without a model-token limit.
   *
   * @param policy the policy applied
   * @param key the caller
   * @param decision the store's decision
   * @param levels the budgets decided on, root first
   * @param degraded whether the store failed and the call was let through
   */
  public RateLimitOutcome(
      RateLimitPolicy policy, RateLimitKey key, Decision decision, List<Budget> levels, boolean degraded) {
    this(policy, key, decision, levels, degraded, null, null);
  }

  /**
   * Returns the budget that decided: the denying level, or the binding one when allowed.
   *
   * @return the level's budget (the last level when the decision names none of them)
   */
  public Budget decidingBudget() {
    for (Budget b : levels) {
      if (b.name().equals(decision.level())) {
        return b;
      }
    }
    return levels.get(levels.size() - 1);
  }

  /**
   * Ends an admitted call that nobody proceeds with (its caller went away while it was charged):
   * releases its slots and refunds its model tokens, without blocking. Each is given back at most
   * once, however often the call is ended or settled.
   */
  public void abandon() {
    if (slots != null) {
      slots.releaseAsync();
    }
    if (modelTokens != null && !modelTokens.settled()) {
      modelTokens.settleAsync(null, true);
    }
  }
}
