package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.DayOfWeek;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.time.temporal.TemporalAdjusters;

/**
 * A calendar period over which a {@link QuotaLimit} counts, aligned to the calendar of a time zone:
 * a period starts at its calendar boundary in that zone and ends at the next one, whatever the
 * month's length, a leap day or a daylight-saving change (a day of 23 or 25 hours is one day).
 * Nothing has to run at the boundary for a quota to reset: a call after it counts in a new period.
 */
public enum QuotaPeriod {

  /** From the start of an hour of the zone's local time to the start of the next. */
  HOUR,

  /** From midnight to midnight in the zone (the day's first instant, where midnight is skipped). */
  DAY,

  /** From Monday's start to the next Monday's start in the zone. */
  WEEK,

  /** From the first day of a month to the first day of the next, in the zone. */
  MONTH;

  /**
   * Returns the start of the period that holds {@code at}.
   *
   * @param at an instant
   * @param zone the calendar's time zone
   * @return the period's first instant, at or before {@code at}
   * @throws IllegalArgumentException if an argument is null
   */
  public Instant start(Instant at, ZoneId zone) {
    Args.notNull("at", at);
    Args.notNull("zone", zone);
    ZonedDateTime local = at.atZone(zone);
    return switch (this) {
      case HOUR -> local.truncatedTo(ChronoUnit.HOURS).toInstant();
      case DAY -> local.toLocalDate().atStartOfDay(zone).toInstant();
      case WEEK -> local.toLocalDate().with(TemporalAdjusters.previousOrSame(DayOfWeek.MONDAY))
          .atStartOfDay(zone).toInstant();
      case MONTH -> local.toLocalDate().withDayOfMonth(1).atStartOfDay(zone).toInstant();
    };
  }

  /**
   * Returns the end of the period that holds {@code at}: the start of the next one.
   *
   * @param at an instant
   * @param zone the calendar's time zone
   * @return the first instant after the period, after {@code at}
   * @throws IllegalArgumentException if an argument is null
   */
  public Instant end(Instant at, ZoneId zone) {
    Instant start = start(at, zone);
    ZonedDateTime local = start.atZone(zone);
    Instant end = switch (this) {
      // an hour's end: the next hour's start (a repeated local hour at a change back is two periods)
      case HOUR -> start.plus(1, ChronoUnit.HOURS).atZone(zone).truncatedTo(ChronoUnit.HOURS)
          .toInstant();
      case DAY -> local.toLocalDate().plusDays(1).atStartOfDay(zone).toInstant();
      case WEEK -> local.toLocalDate().plusWeeks(1).atStartOfDay(zone).toInstant();
      case MONTH -> local.toLocalDate().plusMonths(1).atStartOfDay(zone).toInstant();
    };
    // a zone whose offset moves by a whole hour at a period start could truncate back onto it
    return end.isAfter(at) ? end : start(start.plus(2, ChronoUnit.HOURS), zone);
  }
}
