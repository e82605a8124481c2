package io.github.llmratelimiter.gateway;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Checks the fields of a JSON request body that size its model-token estimate: the completion caps
 * {@code max_tokens}, {@code max_completion_tokens} and {@code max_output_tokens} must be integers
 * from 0 to {@value #MAX}, and {@code n} (the number of choices) an integer from 1 to {@value #MAX};
 * a field that is absent or {@code null} is not checked. A value the handler would read differently
 * from the estimator (a negative cap, a string, a fraction) would make the estimate wrong, so the
 * request is rejected with a 400 before it is charged. With each value at most {@value #MAX}, a cap
 * times {@code n} cannot overflow.
 */
final class CompletionFields {

  /** The largest value of each field: a 32-bit integer, as OpenAI's API types them. */
  static final long MAX = Integer.MAX_VALUE;

  private static final List<String> CAPS =
      List.of("max_tokens", "max_completion_tokens", "max_output_tokens");
  /** The longest excerpt of a rejected value that a message quotes. */
  private static final int QUOTED = 40;

  private CompletionFields() {}

  /**
   * Checks a request body.
   *
   * @param body the parsed JSON object
   * @throws InvalidRateLimitRequestException naming the first invalid field and its value
   */
  static void check(Map<String, Object> body) {
    for (String field : CAPS) {
      check(body, field, 0);
    }
    check(body, "n", 1);
  }

  private static void check(Map<String, Object> body, String field, long min) {
    Object value = body.get(field);
    if (value == null) {
      return;
    }
    BigInteger integer = integer(value);
    if (integer == null || integer.compareTo(BigInteger.valueOf(min)) < 0
        || integer.compareTo(BigInteger.valueOf(MAX)) > 0) {
      throw new InvalidRateLimitRequestException(field + " must be an integer from " + min + " to "
          + MAX + ", but was " + quote(value), null);
    }
  }

  /** The value as an integer, or {@code null} when it is not a JSON number without a fraction. */
  private static @Nullable BigInteger integer(Object value) {
    if (value instanceof Integer || value instanceof Long || value instanceof Short
        || value instanceof Byte) {
      return BigInteger.valueOf(((Number) value).longValue());
    }
    if (value instanceof BigInteger b) {
      return b;
    }
    if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      return Double.isFinite(d) && d == Math.rint(d) ? new BigDecimal(d).toBigInteger() : null;
    }
    if (value instanceof BigDecimal d) {
      try {
        return d.toBigIntegerExact();
      } catch (ArithmeticException e) {
        return null;
      }
    }
    return null;
  }

  private static String quote(Object value) {
    if (value instanceof Map || value instanceof List) {
      return value instanceof Map ? "a JSON object" : "a JSON array";
    }
    String text = value instanceof String s ? "the string \"" + s + "\"" : String.valueOf(value);
    return text.length() > QUOTED ? text.substring(0, QUOTED) + "..." : text;
  }
}
