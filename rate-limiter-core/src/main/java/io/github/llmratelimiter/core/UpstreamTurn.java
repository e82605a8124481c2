package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import org.jspecify.annotations.Nullable;

/**
 * A call's place in the fair order of an upstream's waiting calls ({@link UpstreamOrder}): whose
 * service it counts as, with what weight and priority class, and, for a call that waits, which
 * waiting call it is.
 *
 * @param tenant the tenant whose counter the call's model tokens go to (the root level's key); a
 *     distributed store keeps only a hash of it
 * @param weight the tenant's weight: its counter grows by tokens divided by it; finite, positive
 * @param priority the call's priority class: a lower class always goes first
 * @param estimate the call's estimated model tokens, counted when it is admitted; at least 0
 * @param waiter the id {@link UpstreamOrder#enter} gave the call when it joined the order, or
 *     {@code null} for a call that does not wait (yet)
 */
public record UpstreamTurn(
    String tenant, double weight, int priority, long estimate, @Nullable String waiter) {

  /**
   * Validates the turn.
   *
   * @throws IllegalArgumentException if the tenant is null or blank, the weight not finite and
   *     positive, the estimate negative, or the waiter blank
   */
  public UpstreamTurn {
    Args.notBlank("tenant", tenant);
    Args.positiveFinite("weight", weight);
    Args.notNegative("estimate", estimate);
    if (waiter != null) {
      Args.notBlank("waiter", waiter);
    }
  }

  /**
   * Returns this turn for the waiting call with the given id.
   *
   * @param id the id {@link UpstreamOrder#enter} gave the call
   * @return the same turn, naming the waiter
   * @throws IllegalArgumentException if the id is null or blank
   */
  public UpstreamTurn waiting(String id) {
    return new UpstreamTurn(tenant, weight, priority, estimate, Args.notBlank("waiter", id));
  }
}
