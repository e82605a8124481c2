package io.github.llmratelimiter.core;

import org.jspecify.annotations.Nullable;

/**
 * A named budget: a sliding-window request limit, a token bucket, a model-token limit, or any mix,
 * applied to each key separately.
 *
 * <p>The name identifies the budget's state in a {@link RateLimitStore}: two limiters that use the
 * same name on the same store share it, so the name must always come with the same limits.
 *
 * @param name the budget's name (also the level named in decisions), not blank, without {@code {}}
 *     or {@code }}
 * @param window the requests-per-window limit, or {@code null} for none
 * @param bucket the burst bucket, or {@code null} for none
 * @param modelTokens the model tokens per window (TPM), or {@code null} for none
 */
public record Budget(
    String name,
    @Nullable WindowLimit window,
    @Nullable BucketLimit bucket,
    @Nullable ModelTokenLimit modelTokens) {

  /**
   * Validates the budget.
   *
   * @throws IllegalArgumentException if the name is blank or holds a brace, or every limit is null
   */
  public Budget {
    Args.notBlank("name", name);
    if (name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
      throw new IllegalArgumentException("name must not contain '{' or '}', but was '" + name + "'");
    }
    if (window == null && bucket == null && modelTokens == null) {
      throw new IllegalArgumentException("budget '" + name
          + "' needs a window, a bucket or a model-token limit, but all were null");
    }
  }

  /**
   * Returns a budget without a model-token limit.
   *
   * @param name the budget's name
   * @param window the requests-per-window limit, or {@code null} for none
   * @param bucket the burst bucket, or {@code null} for none
   * @throws IllegalArgumentException if the name is blank or holds a brace, or both limits are
   *     null
   */
  public Budget(String name, @Nullable WindowLimit window, @Nullable BucketLimit bucket) {
    this(name, window, bucket, null);
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

  /**
   * Returns whether a call estimated at {@code modelTokens} can ever fit the model-token limit.
   *
   * @param modelTokens the call's estimated model tokens
   * @return {@code false} if the limit is below the estimate
   */
  public boolean fitsModelTokens(long modelTokens) {
    return this.modelTokens == null || modelTokens <= this.modelTokens.limit();
  }

  /**
   * Returns a copy of this budget with a model-token limit.
   *
   * @param limit the model tokens per window
   * @return the new budget
   */
  public Budget withModelTokens(ModelTokenLimit limit) {
    return new Budget(name, window, bucket, Args.notNull("limit", limit));
  }
}
