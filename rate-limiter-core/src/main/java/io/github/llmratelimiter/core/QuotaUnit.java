package io.github.llmratelimiter.core;

/** What a {@link QuotaLimit} counts. */
public enum QuotaUnit {

  /** Calls: each admitted call counts 1. */
  REQUESTS,

  /** Model tokens (prompt and completion): a call counts its estimate, then its actual usage. */
  TOKENS,

  /**
   * Money, in integer micro-units of the operator's currency (1,000,000 to the unit): a call
   * counts its estimated cost, then its actual cost.
   */
  COST;

  /**
   * Returns the amount a call consumes in this unit.
   *
   * @param consumption what the call consumed (or is estimated to)
   * @return its requests, model tokens or cost
   */
  public long amount(Consumption consumption) {
    return switch (this) {
      case REQUESTS -> consumption.requests();
      case TOKENS -> consumption.modelTokens();
      case COST -> consumption.spend();
    };
  }
}
