package io.github.llmratelimiter.autoconfigure;

import org.jspecify.annotations.Nullable;

/**
 * Thrown at start-up when a {@code ratelimiter.*} property has a value outside its valid range; the
 * failure analyzer turns it into a message that names the property, the value and the range.
 */
public final class InvalidRateLimitPropertyException extends IllegalArgumentException {

  private static final long serialVersionUID = 1L;

  private final String property;
  private final @Nullable String value;
  private final String validRange;

  /**
   * Creates the exception.
   *
   * @param property the property's full name, for example {@code ratelimiter.rpm.limit}
   * @param value the invalid value as configured, or {@code null} when it is missing
   * @param validRange a description of the valid values
   */
  public InvalidRateLimitPropertyException(String property, @Nullable Object value, String validRange) {
    super("Invalid value " + (value == null ? "(missing)" : "'" + value + "'") + " for property '"
        + property + "': expected " + validRange);
    this.property = property;
    this.value = value == null ? null : String.valueOf(value);
    this.validRange = validRange;
  }

  /**
   * Returns the property's full name.
   *
   * @return the property
   */
  public String property() {
    return property;
  }

  /**
   * Returns the invalid value, or {@code null} when it was missing.
   *
   * @return the value
   */
  public @Nullable String value() {
    return value;
  }

  /**
   * Returns a description of the valid values.
   *
   * @return the valid range
   */
  public String validRange() {
    return validRange;
  }
}
