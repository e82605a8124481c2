package io.github.llmratelimiter.gateway;

/**
 * Thrown when a request to limit carries no API key and {@code ratelimiter.missing-key} is {@code
 * reject}; a web front door turns it into a 401 problem response ({@link RateLimitGateway#reject}).
 */
public final class MissingApiKeyException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** Creates the exception. */
  public MissingApiKeyException() {
    super("The request carries no API key (Authorization: Bearer <key> or X-API-Key: <key>)",
        null, false, false);
  }
}
