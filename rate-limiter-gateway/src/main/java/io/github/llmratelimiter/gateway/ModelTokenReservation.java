package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * The model tokens an admitted call reserved on its policy's tokens-per-window (TPM) budgets, and
 * the requests, model tokens and cost it charged at its quotas, to be settled once with what the
 * call really used.
 *
 * <p>Its quotas are settled with {@link Consumption}: a call that ran counts one request, its model
 * tokens and its cost, priced from its usage by the policies' {@link ModelPrices} (an itemized
 * usage at the input, cached-input and output prices; a total alone at the higher of input and
 * output); a refunded call counts nothing ({@link Consumption#NONE}); a call whose usage is unknown
 * keeps its estimate.
 *
 * <p>A front door settles it from the response ({@link RateLimitGateway#settle}): the OpenAI
 * {@code usage} of a JSON body or of the last usage chunk of a {@code text/event-stream}, a refund
 * for a failed call, else the estimate kept. Gateway code that knows the usage another way, or knows
 * the upstream call failed, settles it itself (in a Spring MVC application through {@code
 * io.github.llmratelimiter.autoconfigure.servlet.ModelTokens#current()}). Only the first settlement
 * counts; later ones return {@code false} and change nothing. {@link #reconcileAsync} and {@link
 * #settleAsync} settle through the store's asynchronous API, for a caller that must not block.
 */
public final class ModelTokenReservation {

  private final RateLimitEnforcer enforcer;
  private final String policy;
  private final Reservation reservation;
  private final @Nullable String model;
  private final AtomicBoolean settled = new AtomicBoolean();
  private final RateLimitEnforcer.@Nullable Served served;

  ModelTokenReservation(RateLimitEnforcer enforcer, String policy, Reservation reservation,
      @Nullable String model, RateLimitEnforcer.@Nullable Served served) {
    this.served = served;
    this.enforcer = enforcer;
    this.policy = policy;
    this.reservation = reservation;
    this.model = model;
  }

  /**
   * Returns what a call that ran consumed, from its usage: one request, its model tokens and its
   * cost at its model's prices.
   *
   * @param usage the call's usage
   * @return the consumption
   * @throws IllegalArgumentException if {@code usage} is null
   */
  public Consumption consumption(ModelUsage usage) {
    if (usage == null) {
      throw new IllegalArgumentException("usage must not be null");
    }
    long cost = reservation.chargedQuotas()
        ? enforcer.policies().prices().cost(model, usage) : 0;
    return Consumption.ofCall(usage.totalTokens(), cost);
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
    if (!claim(actualModelTokens)) {
      return false;
    }
    enforcer.reconcile(this, consumption(ModelUsage.ofTotal(actualModelTokens)));
    return true;
  }

  /**
   * Settles the call with what it consumed, from its usage ({@link #consumption(ModelUsage)}).
   *
   * @param usage the usage the response reported
   * @return whether this call settled the reservation
   * @throws IllegalArgumentException if {@code usage} is null
   */
  public boolean reconcile(ModelUsage usage) {
    Consumption actual = consumption(usage);
    if (!claim(0)) {
      return false;
    }
    enforcer.reconcile(this, actual);
    return true;
  }

  /**
   * Settles a call that failed upstream (an error or a timeout): the whole estimate is refunded,
   * model tokens and quotas ({@link Consumption#NONE}: its request, tokens and cost). The
   * request-window slot (RPM) and the burst bucket's permits stay charged.
   *
   * @return whether this call settled the reservation
   */
  public boolean refund() {
    if (!claim(0)) {
      return false;
    }
    enforcer.reconcile(this, Consumption.NONE);
    return true;
  }

  /**
   * Settles a call whose usage is unknown by keeping the estimate charged.
   *
   * @return whether this call settled the reservation
   */
  public boolean keepEstimate() {
    if (!claim(0)) {
      return false;
    }
    enforcer.reconcile(this, reservation.estimated());
    return true;
  }

  /**
   * Settles the call from what its response showed: with the usage when it reported one, else by a
   * refund when the call failed, else by keeping the estimate.
   *
   * @param usage the model tokens the response reported, or {@code null} when it reported none
   * @param failed whether the call failed (an error before the response, or an error status)
   * @return whether this call settled the reservation
   * @throws IllegalArgumentException if the usage is negative
   */
  public boolean settle(@Nullable Long usage, boolean failed) {
    return settleUsage(usage == null ? null : ModelUsage.ofTotal(usage), failed);
  }

  /**
   * Settles the call from what its response showed, itemized: with the usage when it reported
   * one, else by a refund when the call failed, else by keeping the estimate.
   *
   * @param usage the usage the response reported, or {@code null} when it reported none
   * @param failed whether the call failed (an error before the response, or an error status)
   * @return whether this call settled the reservation
   */
  public boolean settleUsage(@Nullable ModelUsage usage, boolean failed) {
    Consumption actual = settlement(usage, failed);
    if (!claim(0)) {
      return false;
    }
    enforcer.reconcile(this, actual);
    return true;
  }

  /**
   * Settles the call like {@link #reconcile} without blocking the caller.
   *
   * @param actualModelTokens the usage, at least 0
   * @return a stage that completes with whether this call settled the reservation, once the store
   *     has settled it (or lost the settlement to a failure, which is logged); it never fails
   * @throws IllegalArgumentException if the usage is negative
   */
  public CompletionStage<Boolean> reconcileAsync(long actualModelTokens) {
    if (!claim(actualModelTokens)) {
      return CompletableFuture.completedFuture(false);
    }
    return enforcer.reconcileAsync(this, consumption(ModelUsage.ofTotal(actualModelTokens)))
        .thenApply(ignored -> true);
  }

  /**
   * Settles the call like {@link #settle} without blocking the caller.
   *
   * @param usage the model tokens the response reported, or {@code null} when it reported none
   * @param failed whether the call failed
   * @return a stage that completes with whether this call settled the reservation; it never fails
   * @throws IllegalArgumentException if the usage is negative
   */
  public CompletionStage<Boolean> settleAsync(@Nullable Long usage, boolean failed) {
    return settleUsageAsync(usage == null ? null : ModelUsage.ofTotal(usage), failed);
  }

  /**
   * Settles the call like {@link #settleUsage} without blocking the caller.
   *
   * @param usage the usage the response reported, or {@code null} when it reported none
   * @param failed whether the call failed
   * @return a stage that completes with whether this call settled the reservation; it never fails
   */
  public CompletionStage<Boolean> settleUsageAsync(@Nullable ModelUsage usage, boolean failed) {
    Consumption actual = settlement(usage, failed);
    if (!claim(0)) {
      return CompletableFuture.completedFuture(false);
    }
    return enforcer.reconcileAsync(this, actual).thenApply(ignored -> true);
  }

  private Consumption settlement(@Nullable ModelUsage usage, boolean failed) {
    return usage != null ? consumption(usage) : failed ? Consumption.NONE : reservation.estimated();
  }

  /** Validates the usage and claims the one settlement; false when it was already claimed. */
  private boolean claim(long actualModelTokens) {
    if (actualModelTokens < 0) {
      throw new IllegalArgumentException(
          "actualModelTokens must be >= 0, but was " + actualModelTokens);
    }
    return settled.compareAndSet(false, true);
  }

  /** The upstream, tenant and weight the call was counted under in the waiting order, or null. */
  RateLimitEnforcer.@Nullable Served served() {
    return served;
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
