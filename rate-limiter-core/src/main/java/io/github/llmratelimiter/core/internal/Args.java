package io.github.llmratelimiter.core.internal;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Argument checks that name the parameter and its value in the {@link IllegalArgumentException}.
 *
 * <p>Shared by the stores of every module, so that each rejects bad input with the same message.
 * Not API: see the package's documentation.
 */
public final class Args {

  private Args() {}

  /**
   * Checks that a value is present.
   *
   * @param name the parameter's name, for the message
   * @param value the value
   * @param <T> the value's type
   * @return the value
   * @throws IllegalArgumentException if the value is null
   */
  public static <T> T notNull(String name, @Nullable T value) {
    if (value == null) {
      throw new IllegalArgumentException(name + " must not be null");
    }
    return value;
  }

  /**
   * Checks that a string has a character other than whitespace.
   *
   * @param name the parameter's name, for the message
   * @param value the value
   * @return the value
   * @throws IllegalArgumentException if the value is null or blank
   */
  public static String notBlank(String name, @Nullable String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(
          name + " must not be null or blank, but was " + (value == null ? "null" : "'" + value + "'"));
    }
    return value;
  }

  /**
   * Checks that a number is at least 0.
   *
   * @param name the parameter's name, for the message
   * @param value the value
   * @return the value
   * @throws IllegalArgumentException if the value is negative
   */
  public static long notNegative(String name, long value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must be >= 0, but was " + value);
    }
    return value;
  }

  /**
   * Checks that a number is above 0.
   *
   * @param name the parameter's name, for the message
   * @param value the value
   * @return the value
   * @throws IllegalArgumentException if the value is 0 or negative
   */
  public static long positive(String name, long value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be > 0, but was " + value);
    }
    return value;
  }

  /**
   * Checks that a number is finite and above 0.
   *
   * @param name the parameter's name, for the message
   * @param value the value
   * @return the value
   * @throws IllegalArgumentException if the value is NaN, infinite, 0 or negative
   */
  public static double positiveFinite(String name, double value) {
    if (!(value > 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + " must be finite and > 0, but was " + value);
    }
    return value;
  }

  /**
   * Checks that a number is finite and at least 0.
   *
   * @param name the parameter's name, for the message
   * @param value the value
   * @return the value
   * @throws IllegalArgumentException if the value is NaN, infinite or negative
   */
  public static double notNegativeFinite(String name, double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + " must be finite and >= 0, but was " + value);
    }
    return value;
  }

  /**
   * Checks that a duration is present and above 0.
   *
   * @param name the parameter's name, for the message
   * @param value the value
   * @return the value
   * @throws IllegalArgumentException if the value is null, zero or negative
   */
  public static Duration positive(String name, @Nullable Duration value) {
    notNull(name, value);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be > 0, but was " + value);
    }
    return value;
  }

  /**
   * Checks that a duration is above 0 and returns it in nanoseconds.
   *
   * @param name the parameter's name, for the message
   * @param value the value
   * @return the duration in nanoseconds
   * @throws IllegalArgumentException if the value is null, zero, negative or above {@code
   *     Long.MAX_VALUE} nanoseconds (292 years)
   */
  public static long nanos(String name, @Nullable Duration value) {
    positive(name, value);
    try {
      return value.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(name + " must be at most 292 years, but was " + value);
    }
  }
}
