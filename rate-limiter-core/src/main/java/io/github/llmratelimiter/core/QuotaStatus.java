package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.List;

/**
 * Where one quota of one level stands after a decision.
 *
 * @param level the name of the budget that holds the quota
 * @param quota the quota, with the limits of the call (its plan's)
 * @param used what the key has used of it this period, after the decision: the settled usage of
 *     its calls and the estimates of its calls in flight (this call's included when it was
 *     admitted); the number a call's estimate is checked against
 * @param pending the part of {@code used} that is estimates of model tokens or cost of calls in
 *     flight, not settled yet (a request counts as used at once: always 0 for {@link
 *     QuotaUnit#REQUESTS})
 * @param periodStartMs the period's first instant, epoch milliseconds
 * @param periodEndMs the period's end (the next period's start), epoch milliseconds
 * @param crossed the thresholds (percentages) that the key's use reached first in this period,
 *     reported by this decision: its settled use ({@code used - pending}) and, when this call was
 *     admitted, this call's estimate (the estimates of other calls in flight count once they are
 *     settled, usually below them); each is reported by exactly one decision per key, quota and
 *     period, on every store and across the instances sharing one
 * @param exceeded whether the call's estimate did not fit what was left: a deny when the quota is
 *     enforced, "would have denied" in shadow mode
 */
public record QuotaStatus(String level, QuotaLimit quota, long used, long pending,
    long periodStartMs, long periodEndMs, List<Integer> crossed, boolean exceeded) {

  /**
   * Validates the status.
   *
   * @throws IllegalArgumentException on a null part, a negative amount or a period that ends
   *     before it starts
   */
  public QuotaStatus {
    Args.notBlank("level", level);
    Args.notNull("quota", quota);
    Args.notNegative("used", used);
    Args.notNegative("pending", pending);
    crossed = List.copyOf(Args.notNull("crossed", crossed));
    if (periodEndMs <= periodStartMs) {
      throw new IllegalArgumentException("periodEndMs must be after periodStartMs ("
          + periodStartMs + "), but was " + periodEndMs);
    }
  }

  /**
   * Returns a status without estimates in flight.
   *
   * @param level the name of the budget that holds the quota
   * @param quota the quota
   * @param used what the key has used of it this period
   * @param periodStartMs the period's first instant, epoch milliseconds
   * @param periodEndMs the period's end, epoch milliseconds
   * @param crossed the thresholds this decision reported
   * @param exceeded whether the call's estimate did not fit
   */
  public QuotaStatus(String level, QuotaLimit quota, long used, long periodStartMs,
      long periodEndMs, List<Integer> crossed, boolean exceeded) {
    this(level, quota, used, 0, periodStartMs, periodEndMs, crossed, exceeded);
  }

  /**
   * Returns what the key's settled calls used: {@code used} without the estimates in flight.
   *
   * @return {@code max(0, used - pending)}
   */
  public long settled() {
    return Math.max(0, used - pending);
  }

  /**
   * Returns what is left of the quota this period.
   *
   * @return {@code max(0, limit - used)}
   */
  public long remaining() {
    return Math.max(0, quota.limit() - used);
  }

  /**
   * Returns the milliseconds from {@code nowMs} until the period ends.
   *
   * @param nowMs the current time, epoch milliseconds
   * @return at least 1
   */
  public long resetMs(long nowMs) {
    return Math.max(1, periodEndMs - nowMs);
  }
}
