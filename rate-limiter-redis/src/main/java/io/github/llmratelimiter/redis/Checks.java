package io.github.llmratelimiter.redis;

import org.jspecify.annotations.Nullable;

/**
 * Argument checks with the same {@link IllegalArgumentException} messages as the core's in-memory
 * store, so that both stores reject bad input alike.
 */
final class Checks {

  private Checks() {}

  static <T> T notNull(String name, @Nullable T value) {
    if (value == null) {
      throw new IllegalArgumentException(name + " must not be null");
    }
    return value;
  }

  static String notBlank(String name, @Nullable String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(
          name + " must not be null or blank, but was " + (value == null ? "null" : "'" + value + "'"));
    }
    return value;
  }

  static double positiveFinite(String name, double value) {
    if (!(value > 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + " must be finite and > 0, but was " + value);
    }
    return value;
  }
}
