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
   * Returns the amount a call consumes in this unit, as a quota counts it: at most {@link
   * QuotaLimit#MAX_LIMIT} (more than any quota's limit, so an amount above it is one that never
   * fits an enforced quota either way).
   *
   * @param consumption what the call consumed (or is estimated to)
   * @return its requests, model tokens or cost, at most 2<sup>53</sup>
   */
  public long amount(Consumption consumption) {
    long amount = switch (this) {
      case REQUESTS -> consumption.requests();
      case TOKENS -> consumption.modelTokens();
      case COST -> consumption.spend();
    };
    return Math.min(amount, QuotaLimit.MAX_LIMIT);
  }

  /**
   * Returns an amount of this unit in words: money as an exact decimal amount of the currency
   * (micro-units / 1,000,000, for example {@code 0.00256}), else the count and the unit's name.
   *
   * @param amount an amount of this unit (for {@link #COST}, micro-units)
   * @return for example {@code "0.00256"} or {@code "100 requests"}
   */
  public String format(long amount) {
    if (this == COST) {
      return java.math.BigDecimal.valueOf(amount, 6).stripTrailingZeros().toPlainString();
    }
    return amount + " " + name().toLowerCase(java.util.Locale.ROOT);
  }
}
