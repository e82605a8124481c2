package io.github.llmratelimiter.gateway;

/**
 * Thrown when a request to limit carries no API key (or, on a route keyed on the principal, is not
 * authenticated) and {@code ratelimiter.missing-key} is {@code reject}; a web front door turns it
 * into a 401 problem response ({@link RateLimitGateway#reject}).
 */
public final class MissingApiKeyException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final KeySource source;

  /** Creates the exception for a request without an API key. */
  public MissingApiKeyException() {
    this(KeySource.API_KEY);
  }

  /**
   * Creates the exception for a request whose caller a source that authenticates did not find.
   *
   * @param source the source: {@link KeySource#API_KEY} or {@link KeySource#PRINCIPAL}
   * @throws IllegalArgumentException if it is another source, or null
   */
  public MissingApiKeyException(KeySource source) {
    super(source == KeySource.PRINCIPAL ? "The request is not authenticated"
        : "The request carries no API key (Authorization: Bearer <key> or X-API-Key: <key>)",
        null, false, false);
    if (source != KeySource.API_KEY && source != KeySource.PRINCIPAL) {
      throw new IllegalArgumentException("source must be API_KEY or PRINCIPAL, but was " + source);
    }
    this.source = source;
  }

  /**
   * Returns the source that found no caller.
   *
   * @return {@link KeySource#API_KEY} or {@link KeySource#PRINCIPAL}
   */
  public KeySource source() {
    return source;
  }
}
