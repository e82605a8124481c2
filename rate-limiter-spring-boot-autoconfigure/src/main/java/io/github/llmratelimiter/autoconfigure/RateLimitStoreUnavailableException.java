package io.github.llmratelimiter.autoconfigure;

/**
 * Thrown when the store fails to decide and {@code ratelimiter.store-failure} is {@code deny}; in a
 * Spring MVC application it becomes a 503 problem response.
 */
public final class RateLimitStoreUnavailableException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final String policy;

  /**
   * Creates the exception.
   *
   * @param policy the policy whose decision failed
   * @param cause the store's failure
   */
  public RateLimitStoreUnavailableException(String policy, Throwable cause) {
    super("The rate-limit store failed to decide for policy '" + policy + "'", cause);
    this.policy = policy;
  }

  /**
   * Returns the policy whose decision failed.
   *
   * @return the policy's name
   */
  public String policy() {
    return policy;
  }
}
