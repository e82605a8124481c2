package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The model tokens an admitted call reserved on its policy's tokens-per-window (TPM) budgets, to be
 * settled once with what the call really used.
 *
 * <p>In a Spring MVC application the response's OpenAI {@code usage} settles it automatically (a
 * JSON body, or the last usage chunk of a {@code text/event-stream}); gateway code that knows the
 * usage another way, or knows the upstream call failed, settles it itself through {@code
 * io.github.llmratelimiter.autoconfigure.web.ModelTokens#current()}. Only the first settlement
 * counts; later ones return {@code false} and change nothing.
 */
public final class ModelTokenReservation {

  private final RateLimitEnforcer enforcer;
  private final String policy;
  private final Reservation reservation;
  private final AtomicBoolean settled = new AtomicBoolean();

  ModelTokenReservation(RateLimitEnforcer enforcer, String policy, Reservation reservation) {
    this.enforcer = enforcer;
    this.policy = policy;
    this.reservation = reservation;
  }

  /**
   * Returns the model tokens reserved before the call: the estimate.
   *
   * @return the estimate
   */
  public long estimate() {
    return reservation.estimate();
  }

  /**
   * Returns the name of the policy whose budgets hold the reservation.
   *
   * @return the policy's name
   */
  public String policy() {
    return policy;
  }

  /**
   * Returns the store's reservation.
   *
   * @return the reservation
   */
  public Reservation reservation() {
    return reservation;
  }

  /**
   * Replaces the estimate with the model tokens the call used, refunding an over-estimate or
   * charging an under-estimate in the same window entry ({@link RateLimitStore#reconcile}).
   *
   * @param actualModelTokens the usage, for example OpenAI's {@code usage.total_tokens}, at least 0
   * @return whether this call settled the reservation ({@code false} if it was already settled)
   * @throws IllegalArgumentException if the usage is negative
   */
  public boolean reconcile(long actualModelTokens) {
    if (actualModelTokens < 0) {
      throw new IllegalArgumentException(
          "actualModelTokens must be >= 0, but was " + actualModelTokens);
    }
    if (!settled.compareAndSet(false, true)) {
      return false;
    }
    enforcer.reconcile(this, actualModelTokens);
    return true;
  }

  /**
   * Settles a call that failed upstream (an error or a timeout): the whole estimate is refunded.
   * The request-window slot (RPM) and the burst bucket's permits stay charged.
   *
   * @return whether this call settled the reservation
   */
  public boolean refund() {
    return reconcile(0);
  }

  /**
   * Settles a call whose usage is unknown by keeping the estimate charged.
   *
   * @return whether this call settled the reservation
   */
  public boolean keepEstimate() {
    return reconcile(reservation.estimate());
  }

  /**
   * Returns whether the reservation was settled.
   *
   * @return whether one of the settling methods ran
   */
  public boolean settled() {
    return settled.get();
  }

  @Override
  public String toString() {
    return "ModelTokenReservation[policy=" + policy + ", estimate=" + reservation.estimate()
        + ", settled=" + settled.get() + "]";
  }
}
