package io.github.llmratelimiter.gateway;

/**
 * Thrown before a limited request is charged when its body is larger than the limiter accepts:
 * above {@code ratelimiter.web.max-body} (declared by its {@code Content-Length} or streamed past
 * it), or, on a route that reads the model from the body, a JSON body above {@code
 * ratelimiter.web.max-body-peek}, whose model (and so whose budget) cannot be read. It becomes a 413
 * problem response; nothing is charged.
 */
public final class RequestBodyTooLargeException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final String property;
  private final long limitBytes;

  /**
   * Creates the exception.
   *
   * @param property the property whose limit the body passed, for example {@code
   *     ratelimiter.web.max-body}
   * @param limitBytes the limit in bytes
   */
  public RequestBodyTooLargeException(String property, long limitBytes) {
    super("The request body is larger than the " + limitBytes + " bytes the rate limiter accepts ("
        + property + ")", null, false, false);
    this.property = property;
    this.limitBytes = limitBytes;
  }

  /**
   * Returns the property whose limit the body passed.
   *
   * @return the property's full name
   */
  public String property() {
    return property;
  }

  /**
   * Returns the limit the body passed.
   *
   * @return the limit in bytes
   */
  public long limitBytes() {
    return limitBytes;
  }
}
