package io.github.llmratelimiter.autoconfigure;

/**
 * Receives every decision the {@link RateLimitEnforcer} takes, for example to record metrics. Every
 * bean of this type is called, in order, on the calling thread; it must be fast and must not throw.
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
}
