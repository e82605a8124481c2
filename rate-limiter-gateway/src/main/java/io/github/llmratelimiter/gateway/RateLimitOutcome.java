package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
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
 * @param reservation the store's answer: what it reserved (model tokens, slots, quotas) and what
 *     each component of every level admits after the call ({@link Reservation#components()});
 *     {@code null} when the outcome is degraded, or was built from a decision alone
 * @param modelTokens the handle that settles the model tokens an allowed call reserved, or {@code
 *     null} when it reserved none
 * @param plan the plan the call was decided under: its levels are the plan's variants of the
 *     policy's budgets
 * @param slots the handle that gives back the slots an allowed call took on limits on calls in
 *     flight, or {@code null} when it took none
 * @param shadowDeny the store's deny of a call its policy admitted in shadow mode ({@link
 *     RateLimitPolicy#enforce()} false): the reason and wait it would have been denied with; {@code
 *     null} when the store did not deny it or the policy is enforced
 * @param upstream the provider account the call goes to ({@link UpstreamRoutes}), decided with
 *     the call's levels in the same store call; {@code null} when the call has none. Its
 *     reservation's last level is then the upstream's budget, so that settling and releasing the
 *     call settle and release the upstream too
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
    @Nullable CallSlots slots,
    @Nullable Decision shadowDeny,
    @Nullable Upstream upstream) {

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
    if (shadowDeny != null && (shadowDeny.allowed() || decision.denied())) {
      throw new IllegalArgumentException("shadowDeny must be a deny of an admitted call, but was "
          + shadowDeny + " for " + decision);
    }
  }

  /**
   * Returns an outcome of a call that goes to no upstream.
   *
   * @param policy the policy applied
   * @param key the caller
   * @param decision the store's decision
   * @param levels the budgets decided on, root first
   * @param degraded whether the store failed and the call was let through
   * @param reservation the store's answer on the reserved budgets, or {@code null}
   * @param modelTokens the handle that settles the reservation, or {@code null}
   * @param plan the plan the call was decided under
   * @param slots the handle that gives back the call's slots, or {@code null}
   * @param shadowDeny the deny of a call admitted in shadow mode, or {@code null}
   */
  public RateLimitOutcome(RateLimitPolicy policy, RateLimitKey key, Decision decision,
      List<Budget> levels, boolean degraded, @Nullable Reservation reservation,
      @Nullable ModelTokenReservation modelTokens, String plan, @Nullable CallSlots slots,
      @Nullable Decision shadowDeny) {
    this(policy, key, decision, levels, degraded, reservation, modelTokens, plan, slots,
        shadowDeny, null);
  }

  /**
   * Returns an outcome that is not a shadow deny.
   *
   * @param policy the policy applied
   * @param key the caller
   * @param decision the store's decision
   * @param levels the budgets decided on, root first
   * @param degraded whether the store failed and the call was let through
   * @param reservation the store's answer on the reserved budgets, or {@code null}
   * @param modelTokens the handle that settles the reservation, or {@code null}
   * @param plan the plan the call was decided under
   * @param slots the handle that gives back the call's slots, or {@code null}
   */
  public RateLimitOutcome(RateLimitPolicy policy, RateLimitKey key, Decision decision,
      List<Budget> levels, boolean degraded, @Nullable Reservation reservation,
      @Nullable ModelTokenReservation modelTokens, String plan, @Nullable CallSlots slots) {
    this(policy, key, decision, levels, degraded, reservation, modelTokens, plan, slots, null,
        null);
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
        policy == null ? "" : policy.defaultPlan(), null, null, null);
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
   * Returns the budget that decided: the denying level, or the binding one when allowed; the
   * upstream's budget ({@link Upstream#budget()}) when the upstream decided the call.
   *
   * @return the level's budget (the last level when the decision names none of them)
   */
  public Budget decidingBudget() {
    for (Budget b : levels) {
      if (b.name().equals(decision.level())) {
        return b;
      }
    }
    if (upstream != null && upstream.budget().name().equals(decision.level())) {
      return upstream.budget();
    }
    return levels.get(levels.size() - 1);
  }

  /**
   * Returns whether the call's upstream denied it: every level of the caller admitted it, but the
   * provider's capacity is used ({@link Reason#UPSTREAM_LIMIT}).
   *
   * @return whether the upstream denied the call
   */
  public boolean upstreamDenied() {
    return decision.reason() == Reason.UPSTREAM_LIMIT;
  }

  /**
   * Returns whether the call was admitted only because its policy is in shadow mode: its levels
   * denied it ({@link #shadowDeny()} says why).
   *
   * @return whether it would have been denied
   */
  public boolean wouldHaveDenied() {
    return shadowDeny != null;
  }

  /**
   * Returns where every quota of the call's levels stands after the decision, root first: each
   * quota's use, limit and period, the thresholds this decision crossed first, and whether the
   * call exceeded it.
   *
   * @return the statuses; empty when no level has a quota, the store did not read them (a call
   *     that could never fit), or the outcome is degraded
   */
  public List<QuotaStatus> quotas() {
    return reservation == null ? List.of() : reservation.quotas();
  }

  /**
   * Returns the quota that denied the call, or would have in shadow mode: the first status of the
   * deciding level whose quota the call exceeded, enforced ones first.
   *
   * @return the status, or {@code null} when no quota denied the call
   */
  public @Nullable QuotaStatus exceededQuota() {
    Decision d = shadowDeny != null ? shadowDeny : decision;
    if (d.reason() != Reason.QUOTA_EXCEEDED) {
      return null;
    }
    QuotaStatus first = null;
    for (QuotaStatus s : quotas()) {
      if (s.exceeded() && s.level().equals(d.level())) {
        if (s.quota().enforce()) {
          return s;
        }
        first = first == null ? s : first;
      }
    }
    return first;
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
