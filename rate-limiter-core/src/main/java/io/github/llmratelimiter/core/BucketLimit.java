package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;

/**
 * The shape of a token bucket: it holds at most {@code capacity} tokens and regains {@code
 * refillPerSecond} tokens each second, continuously.
 *
 * <p>A refill of 0 makes a one-shot budget: its denies never clear by waiting.
 *
 * @param capacity the most tokens the bucket holds (its burst), finite and positive
 * @param refillPerSecond tokens regained per second, finite and not negative
 */
public record BucketLimit(double capacity, double refillPerSecond) {

  /**
   * Validates the shape.
   *
   * @throws IllegalArgumentException if {@code capacity} is not finite and positive, or {@code
   *     refillPerSecond} is negative or not finite
   */
  public BucketLimit {
    Args.positiveFinite("capacity", capacity);
    Args.notNegativeFinite("refillPerSecond", refillPerSecond);
  }
}
