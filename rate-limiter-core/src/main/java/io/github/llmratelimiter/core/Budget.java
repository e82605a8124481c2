package io.github.llmratelimiter.core;

import org.jspecify.annotations.Nullable;

/**
 * A named budget: a sliding-window limit, a token bucket, or both, applied to each key separately.
 *
 * <p>The name identifies the budget's state in a {@link RateLimitStore}: two limiters that use the
 * same name on the same store share it, so the name must always come with the same limits.
 *
 * @param name the budget's name (also the level named in decisions), not blank, without {@code {}}
 *     or {@code }}
 * @param window the requests-per-window limit, or {@code null} for none
 * @param bucket the burst bucket, or {@code null} for none
 */
public record Budget(String name, @Nullable WindowLimit window, @Nullable BucketLimit bucket) {

  /**
   * Validates the budget.
   *
   * @throws IllegalArgumentException if the name is blank or holds a brace, or both limits are
   *     null
   */
  public Budget {
    Args.notBlank("name", name);
    if (name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
      throw new IllegalArgumentException("name must not contain '{' or '}', but was '" + name + "'");
    }
    if (window == null && bucket == null) {
      throw new IllegalArgumentException(
          "budget '" + name + "' needs a window, a bucket or both, but both were null");
    }
  }

  /**
   * Returns a budget with both a window and a bucket.
   *
   * @param name the budget's name
   * @param window the requests-per-window limit
   * @param bucket the burst bucket
   * @return the budget
   */
  public static Budget of(String name, WindowLimit window, BucketLimit bucket) {
    return new Budget(name, Args.notNull("window", window), Args.notNull("bucket", bucket));
  }

  /**
   * Returns whether a call of {@code cost} tokens can ever fit this budget's bucket.
   *
   * @param cost the call's cost in bucket tokens
   * @return {@code false} if the bucket's capacity is below the cost
   */
  public boolean fits(double cost) {
    return bucket == null || cost <= bucket.capacity();
  }
}
