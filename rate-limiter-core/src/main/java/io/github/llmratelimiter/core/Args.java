package io.github.llmratelimiter.core;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** Argument checks that name the parameter and its value in the {@link IllegalArgumentException}. */
final class Args {

  private Args() {}

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

  static long notNegative(String name, long value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must be >= 0, but was " + value);
    }
    return value;
  }

  static long positive(String name, long value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be > 0, but was " + value);
    }
    return value;
  }

  static double positiveFinite(String name, double value) {
    if (!(value > 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + " must be finite and > 0, but was " + value);
    }
    return value;
  }

  static double notNegativeFinite(String name, double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + " must be finite and >= 0, but was " + value);
    }
    return value;
  }

  static Duration positive(String name, @Nullable Duration value) {
    notNull(name, value);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be > 0, but was " + value);
    }
    return value;
  }

  /** The positive duration in nanoseconds; beyond {@code Long.MAX_VALUE} ns (292 years) fails. */
  static long nanos(String name, @Nullable Duration value) {
    positive(name, value);
    try {
      return value.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(name + " must be at most 292 years, but was " + value);
    }
  }
}
