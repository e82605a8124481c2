package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.List;

/**
 * Where one quota of one level stands after a decision.
 *
 * @param level the name of the budget that holds the quota
 * @param quota the quota, with the limits of the call (its plan's)
 * @param used what the key has used of it this period, after the decision (with this call's
 *     estimate when it was admitted)
 * @param periodStartMs the period's first instant, epoch milliseconds
 * @param periodEndMs the period's end (the next period's start), epoch milliseconds
 * @param crossed the thresholds (percentages) this decision crossed first in this period: each is
 *     reported by exactly one decision per key, quota and period, on every store and across the
 *     instances sharing one
 * @param exceeded whether the call's estimate did not fit what was left: a deny when the quota is
 *     enforced, "would have denied" in shadow mode
 */
public record QuotaStatus(String level, QuotaLimit quota, long used, long periodStartMs,
    long periodEndMs, List<Integer> crossed, boolean exceeded) {

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
    crossed = List.copyOf(Args.notNull("crossed", crossed));
    if (periodEndMs <= periodStartMs) {
      throw new IllegalArgumentException("periodEndMs must be after periodStartMs ("
          + periodStartMs + "), but was " + periodEndMs);
    }
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
