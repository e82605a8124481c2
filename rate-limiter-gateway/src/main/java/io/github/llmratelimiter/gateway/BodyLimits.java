package io.github.llmratelimiter.gateway;

/**
 * How much of a request body the limiter accepts and reads ({@code ratelimiter.web.*}): {@code
 * maxBody}, the largest body a limited request may carry, and {@code maxPeek}, the largest JSON body
 * it parses ({@code 1 <= maxPeek <= maxBody}); whether it reads bodies at all ({@code readBodies}),
 * and where a request outside any route finds its model.
 *
 * @param maxBody the largest body a limited request may carry, in bytes
 * @param maxPeek the largest JSON body the limiter parses, in bytes
 * @param readBodies whether the limiter reads request bodies (the model, the estimate, the checks)
 * @param defaultModelSource where a request whose route names no source finds its model
 */
public record BodyLimits(long maxBody, long maxPeek, boolean readBodies, ModelSource defaultModelSource) {

  /** The property of {@link #maxBody}. */
  public static final String MAX_BODY = "ratelimiter.web.max-body";
  /** The property of {@link #maxPeek}. */
  public static final String MAX_BODY_PEEK = "ratelimiter.web.max-body-peek";

  /** The most bytes a buffer may hold. */
  public static final long MAX_BUFFER = Integer.MAX_VALUE - 8;

  /**
   * Validates the limits.
   *
   * @throws IllegalArgumentException if {@code maxBody} is not from 1 to {@link #MAX_BUFFER}, {@code
   *     maxPeek} not from 1 to {@code maxBody}, the source is null, or it reads the body while
   *     bodies are not read
   */
  public BodyLimits {
    if (maxBody < 1 || maxBody > MAX_BUFFER) {
      throw new IllegalArgumentException(
          "maxBody must be from 1 to " + MAX_BUFFER + ", but was " + maxBody);
    }
    if (maxPeek < 1 || maxPeek > maxBody) {
      throw new IllegalArgumentException(
          "maxPeek must be from 1 to maxBody (" + maxBody + "), but was " + maxPeek);
    }
    if (defaultModelSource == null) {
      throw new IllegalArgumentException("defaultModelSource must not be null");
    }
    if (!readBodies && defaultModelSource.readsBody()) {
      throw new IllegalArgumentException(
          "defaultModelSource must not read the body when bodies are not read, but was "
              + defaultModelSource);
    }
  }

  /**
   * Returns the properties' defaults: bodies up to 4 MB, parsed whole, the model read from the body
   * and then the query.
   *
   * @return the limits
   */
  public static BodyLimits defaults() {
    return new BodyLimits(4L << 20, 4L << 20, true, ModelSource.BODY_THEN_QUERY);
  }
}
