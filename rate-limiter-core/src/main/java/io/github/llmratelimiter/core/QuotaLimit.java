package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.List;

/**
 * A budget over a calendar period: at most {@code limit} of {@code unit} per {@code period} of the
 * calendar in {@code zone}, per key.
 *
 * <p>A quota is checked and charged in the same atomic step as the rest of its budget: a call
 * reserves its estimate (1 request, its estimated model tokens or cost), is denied with {@link
 * Reason#QUOTA_EXCEEDED} when the estimate does not fit what is left of the period, and is settled
 * with what it consumed once it ends ({@link RateLimitStore#reconcile(Reservation, Consumption)}),
 * in the period it was charged in. So the only way past a quota's limit is a call that consumes
 * more than its estimate: the overshoot is at most that call's excess.
 *
 * <p>A quota's state is its name, unit and period within its budget's name: any {@linkplain
 * Budget#variant variant} of the budget (a plan) that carries a quota of that name, unit and period
 * counts on the same state, whatever its limit, so moving a key from one plan to another resets
 * nothing.
 *
 * @param name the quota's name within its budget: letters, digits, {@code -}, {@code _} or
 *     {@code .}, not blank
 * @param unit what it counts
 * @param limit the most it admits per period, from 1 to {@link #MAX_LIMIT} (for {@link
 *     QuotaUnit#COST}, micro-units: up to about 9 billion units of the currency)
 * @param period the calendar period
 * @param zone the time zone whose calendar the periods follow
 * @param thresholds the percentages of the limit (1 to 100) whose crossing a decision reports once
 *     per key and period ({@link QuotaStatus#crossed()}), ascending, distinct
 * @param enforce {@code false} for a shadow quota: checked, charged and reported like an enforced
 *     one, but it never denies ({@link QuotaStatus#exceeded()} says when it would have)
 */
public record QuotaLimit(String name, QuotaUnit unit, long limit, QuotaPeriod period, ZoneId zone,
    List<Integer> thresholds, boolean enforce) {

  /**
   * The largest limit, 2<sup>53</sup>: every store counts a quota exactly up to it (the Redis store
   * counts in the doubles of its scripts).
   */
  public static final long MAX_LIMIT = 1L << 53;

  /**
   * Validates the quota.
   *
   * @throws IllegalArgumentException if the name is blank or holds another character, the limit is
   *     below 1 or above {@link #MAX_LIMIT}, a part is null, or a threshold is outside 1..100, repeated or out of order
   */
  public QuotaLimit {
    Args.notBlank("name", name);
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
          || c == '_' || c == '.')) {
        throw new IllegalArgumentException("name must hold only letters, digits, '-', '_' or '.',"
            + " but was '" + name + "'");
      }
    }
    Args.notNull("unit", unit);
    Args.positive("limit", limit);
    if (limit > MAX_LIMIT) {
      throw new IllegalArgumentException("limit must be at most 2^53 (" + MAX_LIMIT + "), but was "
          + limit);
    }
    Args.notNull("period", period);
    Args.notNull("zone", zone);
    thresholds = List.copyOf(Args.notNull("thresholds", thresholds));
    int last = 0;
    for (int t : thresholds) {
      if (t < 1 || t > 100 || t <= last) {
        throw new IllegalArgumentException("thresholds must be ascending distinct percentages"
            + " from 1 to 100, but were " + thresholds);
      }
      last = t;
    }
    if (thresholds.size() > 30) {
      throw new IllegalArgumentException("thresholds must be at most 30, but were " + thresholds);
    }
  }

  /**
   * Returns an enforced quota in UTC without thresholds.
   *
   * @param name the quota's name
   * @param unit what it counts
   * @param limit the most per period
   * @param period the calendar period
   * @return the quota
   */
  public static QuotaLimit of(String name, QuotaUnit unit, long limit, QuotaPeriod period) {
    return new QuotaLimit(name, unit, limit, period, ZoneOffset.UTC, List.of(), true);
  }

  /**
   * Returns this quota with another limit.
   *
   * @param limit the most per period
   * @return the quota
   */
  public QuotaLimit withLimit(long limit) {
    return new QuotaLimit(name, unit, limit, period, zone, thresholds, enforce);
  }

  /**
   * Returns this quota over the calendar of another time zone.
   *
   * @param zone the time zone
   * @return the quota
   */
  public QuotaLimit inZone(ZoneId zone) {
    return new QuotaLimit(name, unit, limit, period, zone, thresholds, enforce);
  }

  /**
   * Returns this quota with thresholds.
   *
   * @param percentages ascending distinct percentages from 1 to 100
   * @return the quota
   */
  public QuotaLimit withThresholds(int... percentages) {
    return new QuotaLimit(name, unit, limit, period, zone,
        Arrays.stream(percentages).boxed().toList(), enforce);
  }

  /**
   * Returns this quota enforced, or in shadow mode.
   *
   * @param enforce {@code false} for a quota that never denies
   * @return the quota
   */
  public QuotaLimit enforced(boolean enforce) {
    return new QuotaLimit(name, unit, limit, period, zone, thresholds, enforce);
  }

  /**
   * Returns the identity of this quota's state within its budget: its name, unit and period.
   *
   * @return {@code name/unit/period}, lower case units
   */
  public String stateId() {
    return name + '/' + unit.name().toLowerCase(java.util.Locale.ROOT) + '/'
        + period.name().toLowerCase(java.util.Locale.ROOT);
  }

  /**
   * Returns the amount at which threshold {@code i} is crossed: its percentage of the limit,
   * rounded up.
   *
   * @param i the threshold's index
   * @return the least amount used that crosses it
   */
  public long thresholdAmount(int i) {
    long t = thresholds.get(i);
    return limit / 100 * t + (limit % 100 * t + 99) / 100;
  }
}
