package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;

/**
 * What each component of one level admits after a decision, each on its own: the figures that
 * {@link Decision#remaining()} takes the smallest of, so that a response can tell every budget's
 * own standing (a window's requests apart from a bucket's burst or the free slots).
 *
 * <p>A component the level does not have reports {@link Long#MAX_VALUE} remaining and 0 ms to
 * reset. The figures are those of the state after the decision, the same on every store: a level
 * that a sequential deny never reached as it stands at the decision's instant, a call admitted
 * counted in its own window, bucket, slot and model tokens.
 *
 * @param level the budget's name
 * @param window the requests its window admits now: {@code max(0, limit - admissions in the
 *     window)}
 * @param windowResetMs milliseconds (rounded up) until the window holds no admission: when its
 *     newest leaves; 0 when empty
 * @param bucket the whole unit-cost calls its bucket pays for now, one after the other (the tokens
 *     it holds rounded down, within the bucket's tolerance)
 * @param bucketResetMs milliseconds (rounded up, at least 1) until the bucket is exactly at
 *     capacity again; 0 when it is full or never refills
 * @param slots the slots for calls in flight that are free now ({@code max(0, limit - held)})
 * @param modelTokens the model tokens its model-token window admits now ({@code max(0, limit -
 *     counted)}, this call's estimate counted when it was reserved)
 * @param modelTokensResetMs milliseconds (rounded up) until the model-token window is empty
 */
public record LevelRemaining(String level, long window, long windowResetMs, long bucket,
    long bucketResetMs, long slots, long modelTokens, long modelTokensResetMs) {

  /**
   * Validates the figures.
   *
   * @throws IllegalArgumentException on a blank level or a negative figure
   */
  public LevelRemaining {
    Args.notBlank("level", level);
    Args.notNegative("window", window);
    Args.notNegative("windowResetMs", windowResetMs);
    Args.notNegative("bucket", bucket);
    Args.notNegative("bucketResetMs", bucketResetMs);
    Args.notNegative("slots", slots);
    Args.notNegative("modelTokens", modelTokens);
    Args.notNegative("modelTokensResetMs", modelTokensResetMs);
  }
}
