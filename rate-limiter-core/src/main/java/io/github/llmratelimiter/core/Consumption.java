package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;

/**
 * What one call consumes of the quantities a {@link QuotaLimit} counts: before the call, its
 * estimate; once it has ended, what it actually used.
 *
 * @param requests the calls counted: 1 for a call that ran, 0 for one refunded (it failed)
 * @param modelTokens the model tokens, prompt and completion
 * @param spend the cost in micro-units of the operator's currency
 */
public record Consumption(long requests, long modelTokens, long spend) {

  /** Nothing consumed: what a failed call is settled with, refunding its whole estimate. */
  public static final Consumption NONE = new Consumption(0, 0, 0);

  /**
   * Validates the amounts.
   *
   * @throws IllegalArgumentException if an amount is negative or {@code requests} is above 1
   */
  public Consumption {
    Args.notNegative("requests", requests);
    Args.notNegative("modelTokens", modelTokens);
    Args.notNegative("spend", spend);
    if (requests > 1) {
      throw new IllegalArgumentException("requests must be 0 or 1, but was " + requests);
    }
  }

  /**
   * Returns what one call that ran consumed.
   *
   * @param modelTokens the model tokens it used
   * @param spend its cost in micro-units
   * @return a consumption of one request
   */
  public static Consumption ofCall(long modelTokens, long spend) {
    return new Consumption(1, modelTokens, spend);
  }
}
