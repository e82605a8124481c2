package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.Duration;

/**
 * A tokens-per-window limit on the <em>model's</em> tokens (TPM): the prompt and completion tokens
 * an LLM call consumes, summed over any window, stay at or under {@code limit}.
 *
 * <p>Not to be confused with the burst bucket's tokens ({@link BucketLimit}), which are permits a
 * call spends to pass the burst check. A call reserves an estimate of its model tokens before it
 * runs and is reconciled to the actual usage afterwards ({@link RateLimitStore#reconcile}).
 *
 * @param limit the model tokens admitted per window, at least 1
 * @param window the window's length, positive
 */
public record ModelTokenLimit(long limit, Duration window) {

  /**
   * Validates the limit.
   *
   * @throws IllegalArgumentException if {@code limit <= 0}, or {@code window} is null, zero or
   *     negative
   */
  public ModelTokenLimit {
    Args.positive("limit", limit);
    Args.positive("window", window);
    try {
      window.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("window must fit in a long of nanoseconds, but was " + window, e);
    }
  }

  /**
   * Returns a limit of {@code limit} model tokens per minute.
   *
   * @param limit model tokens per minute
   * @return the limit
   */
  public static ModelTokenLimit perMinute(long limit) {
    return new ModelTokenLimit(limit, WindowLimit.DEFAULT_WINDOW);
  }
}
