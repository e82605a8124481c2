package io.github.llmratelimiter.gateway;

/**
 * Receives every decision the {@link RateLimitEnforcer} takes, for example to record metrics. Every
 * observer is called, in order, on the thread that has the decision (the caller's, or for an
 * asynchronous decision the thread that completes the store's answer); it must be fast, must not
 * block and should not throw: a failure is logged (by its type) and changes nothing of the call.
 */
@FunctionalInterface
public interface RateLimitObserver {

  /**
   * Called after each decision.
   *
   * @param outcome the outcome (its key is the caller's: never record it in clear)
   * @param nanos how long the store took to decide, in nanoseconds
   */
  void onDecision(RateLimitOutcome outcome, long nanos);

  /**
   * Called after a call's reserved model tokens were reconciled with its usage.
   *
   * @param policy the name of the policy whose budgets held the reservation
   * @param estimate the model tokens reserved before the call
   * @param actual the model tokens the call used (0 for a failed call, which is refunded)
   */
  default void onReconcile(String policy, long estimate, long actual) {}

  /**
   * Called after the quotas a call charged were settled with what it consumed.
   *
   * @param policy the name of the policy whose budgets held the reservation
   * @param reservation the store's reservation: its quotas and estimate ({@link
   *     io.github.llmratelimiter.core.Reservation#estimated()})
   * @param actual what the call consumed ({@link
   *     io.github.llmratelimiter.core.Consumption#NONE} for a failed call, which is refunded)
   */
  default void onSettle(String policy, io.github.llmratelimiter.core.Reservation reservation,
      io.github.llmratelimiter.core.Consumption actual) {}

  /**
   * Called after a provider's response to a call that went to an upstream was read ({@link
   * RateLimitEnforcer#report}), whatever it said.
   *
   * @param upstream the upstream that answered (its name is configuration, not a caller's value)
   * @param report what its rate-limit headers said ({@link
   *     io.github.llmratelimiter.core.ProviderReport#EMPTY} when nothing)
   * @param status the response's status; 429 when the provider refused the call
   */
  default void onProviderReport(io.github.llmratelimiter.core.Upstream upstream,
      io.github.llmratelimiter.core.ProviderReport report, int status) {}
}
