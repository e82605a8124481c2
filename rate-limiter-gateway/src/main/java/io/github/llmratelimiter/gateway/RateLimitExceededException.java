package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Decision;

/**
 * Thrown when a call is denied: by the {@linkplain RateLimitGateway#charge charge step} of every
 * front door (routes, and {@link RateLimited} methods also outside HTTP). A web front door turns it
 * into a 429 problem response ({@link RateLimitGateway#reject}); elsewhere the caller handles it and
 * reads the {@link #decision()}.
 */
public final class RateLimitExceededException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient RateLimitOutcome outcome;

  /**
   * Creates the exception for a denied outcome.
   *
   * @param outcome the outcome, denied
   * @throws IllegalArgumentException if the outcome allowed the call
   */
  public RateLimitExceededException(RateLimitOutcome outcome) {
    super(message(outcome), null, false, false);
    if (outcome.decision().allowed()) {
      throw new IllegalArgumentException("outcome must be a deny, but was " + outcome.decision());
    }
    this.outcome = outcome;
  }

  private static String message(RateLimitOutcome outcome) {
    Decision d = outcome.decision();
    return "Rate limit exceeded: policy '" + outcome.policy().name() + "', level '" + d.level()
        + "', reason " + d.reason() + (d.retryable()
            ? ", retry after " + d.retryAfterMs() + " ms"
            : ", waiting will not clear it");
  }

  /**
   * Returns the outcome of the denied call.
   *
   * @return the outcome
   */
  public RateLimitOutcome outcome() {
    return outcome;
  }

  /**
   * Returns the denying decision.
   *
   * @return the decision
   */
  public Decision decision() {
    return outcome.decision();
  }
}
