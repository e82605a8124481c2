package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.autoconfigure.ModelSource;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.springframework.util.unit.DataSize;

/**
 * How much of a request body the limiter accepts and reads, validated from {@code
 * ratelimiter.web.*}: {@code maxBody}, the largest body a limited request may carry, and {@code
 * maxPeek}, the largest JSON body it parses ({@code 1 <= maxPeek <= maxBody}); whether it reads
 * bodies at all ({@code readBodies}), and where a request outside any route finds its model.
 */
record BodyLimits(long maxBody, long maxPeek, boolean readBodies, ModelSource defaultModelSource) {

  static final String MAX_BODY = "ratelimiter.web.max-body";
  static final String MAX_BODY_PEEK = "ratelimiter.web.max-body-peek";

  /** The most bytes a buffer may hold. */
  private static final long MAX_BUFFER = Integer.MAX_VALUE - 8;

  BodyLimits {
    if (maxBody < 1 || maxBody > MAX_BUFFER) {
      throw new IllegalArgumentException(
          "maxBody must be from 1 to " + MAX_BUFFER + ", but was " + maxBody);
    }
    if (maxPeek < 1 || maxPeek > maxBody) {
      throw new IllegalArgumentException(
          "maxPeek must be from 1 to maxBody (" + maxBody + "), but was " + maxPeek);
    }
    if (!readBodies && defaultModelSource.readsBody()) {
      throw new IllegalArgumentException(
          "defaultModelSource must not read the body when bodies are not read, but was "
              + defaultModelSource);
    }
  }

  /**
   * Validates the web properties.
   *
   * @throws InvalidRateLimitPropertyException naming the first invalid property
   */
  static BodyLimits of(RateLimiterProperties.Web web) {
    DataSize maxBody = web.getMaxBody();
    if (maxBody == null || maxBody.toBytes() < 1 || maxBody.toBytes() > MAX_BUFFER) {
      throw new InvalidRateLimitPropertyException(MAX_BODY, maxBody,
          "a size from 1B to " + MAX_BUFFER + "B, for example 4MB");
    }
    DataSize peek = web.getMaxBodyPeek() == null ? maxBody : web.getMaxBodyPeek();
    if (peek.toBytes() < 1 || peek.toBytes() > maxBody.toBytes()) {
      throw new InvalidRateLimitPropertyException(MAX_BODY_PEEK, peek,
          "a size from 1B to " + MAX_BODY + " (" + maxBody + "), or unset for " + MAX_BODY);
    }
    boolean read = web.isModelFromBody();
    return new BodyLimits(maxBody.toBytes(), peek.toBytes(), read,
        read ? ModelSource.BODY_THEN_QUERY : ModelSource.QUERY);
  }

  /**
   * Returns a route's model source, validated.
   *
   * @param property the property's full name, for the failure
   * @param configured the route's setting, or null for the default
   * @throws InvalidRateLimitPropertyException if it reads the body while bodies are not read
   */
  ModelSource modelSource(String property, @Nullable ModelSource configured) {
    if (configured == null) {
      return defaultModelSource;
    }
    if (!readBodies && configured.readsBody()) {
      throw new InvalidRateLimitPropertyException(property,
          configured.name().toLowerCase(Locale.ROOT).replace('_', '-'),
          "query or none while ratelimiter.web.model-from-body is false (the body is not read)");
    }
    return configured;
  }
}
