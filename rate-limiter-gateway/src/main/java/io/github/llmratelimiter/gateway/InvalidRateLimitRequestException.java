package io.github.llmratelimiter.gateway;

/**
 * Thrown when a call cannot be limited because its input is malformed: a blank key, a cost that is
 * not a finite positive number, an unknown policy named at run time. A web front door turns it into a
 * 400 problem response ({@link RateLimitGateway#reject}), never a 500.
 */
public final class InvalidRateLimitRequestException extends IllegalArgumentException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what was malformed, naming the argument and its value (never an API key)
   * @param cause the underlying exception, or {@code null}
   */
  public InvalidRateLimitRequestException(String message, Throwable cause) {
    super(message, cause);
  }
}
