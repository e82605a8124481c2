package io.github.llmratelimiter.gateway;

/**
 * Thrown when the store fails to decide and the {@link StoreFailure} is not {@link
 * StoreFailure#ALLOW}: {@code deny}, or {@code local-fallback} when the store has no fallback or its
 * fallback cannot answer. A web front door turns it into a 503 problem response ({@link
 * RateLimitGateway#reject}). A store that answers for itself while
 * its backend is down (a Redis store with the fail-closed policy) denies with {@link
 * io.github.llmratelimiter.core.Reason#STORE_UNAVAILABLE} instead; that deny becomes the same 503,
 * with the store's retry time.
 */
public final class RateLimitStoreUnavailableException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final String policy;
  private final long retryAfterMs;

  /**
   * Creates the exception.
   *
   * @param policy the policy whose decision failed
   * @param cause the store's failure
   */
  public RateLimitStoreUnavailableException(String policy, Throwable cause) {
    super("The rate-limit store failed to decide for policy '" + policy + "'", cause);
    this.policy = policy;
    this.retryAfterMs = 0;
  }

  /**
   * Creates the exception for a store that denied because its backend is unavailable.
   *
   * @param policy the policy whose decision was denied
   * @param retryAfterMs the milliseconds after which the store asks its backend again, at least 1
   * @throws IllegalArgumentException if {@code retryAfterMs} is below 1
   */
  public RateLimitStoreUnavailableException(String policy, long retryAfterMs) {
    super("The rate-limit store is unavailable for policy '" + policy + "'; retry after "
        + retryAfterMs + " ms", null, false, false);
    if (retryAfterMs < 1) {
      throw new IllegalArgumentException("retryAfterMs must be >= 1, but was " + retryAfterMs);
    }
    this.policy = policy;
    this.retryAfterMs = retryAfterMs;
  }

  /**
   * Returns the policy whose decision failed.
   *
   * @return the policy's name
   */
  public String policy() {
    return policy;
  }

  /**
   * Returns the milliseconds after which a retry may succeed, or 0 when unknown (the store failed).
   *
   * @return the retry time, or 0
   */
  public long retryAfterMs() {
    return retryAfterMs;
  }
}
