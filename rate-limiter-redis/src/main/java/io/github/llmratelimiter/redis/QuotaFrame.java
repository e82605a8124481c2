package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.QuotaUnit;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Instant;
import java.util.ArrayList;
import java.time.ZoneId;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The quotas of one call: the wall-clock instant it is charged at, and per quota of every level
 * (root first, each level's order) its period there, computed in Java so that the scripts never
 * read a calendar. Builds the quota argument of {@code acquire.lua} and reads the quota part of
 * its reply.
 */
final class QuotaFrame {

  /** How long a counter lives after its period ends, for late settlements (as in memory). */
  static final long RETENTION_MS = 86_400_000L;
  /**
   * The wait of a quota that denies only because of the estimates of calls in flight: what was
   * settled leaves room for the call (as in memory: they settle when their calls end).
   */
  static final long IN_FLIGHT_RETRY_MS = 1000L;

  final long nowMs;
  final Consumption estimate;
  private final List<Budget> levels;
  /** Per level, per quota: its period's start and end, epoch milliseconds. */
  private final long[][] starts;
  private final long[][] ends;
  /** How many quotas the levels hold in all. */
  final int count;

  private QuotaFrame(List<Budget> levels, Consumption estimate, long nowMs) {
    this.levels = levels;
    this.estimate = estimate;
    this.nowMs = nowMs;
    int n = levels.size();
    starts = new long[n][];
    ends = new long[n][];
    int total = 0;
    for (int i = 0; i < n; i++) {
      List<QuotaLimit> quotas = levels.get(i).quotas();
      starts[i] = new long[quotas.size()];
      ends[i] = new long[quotas.size()];
      for (int j = 0; j < quotas.size(); j++) {
        long[] period = period(quotas.get(j), nowMs);
        starts[i][j] = period[0];
        ends[i][j] = period[1];
      }
      total += quotas.size();
    }
    count = total;
  }

  /** The frame of a call on {@code levels} at {@code nowMs}; null when no level has a quota. */
  static @Nullable QuotaFrame of(List<Budget> levels, Consumption estimate, long nowMs) {
    for (Budget b : levels) {
      if (!b.quotas().isEmpty()) {
        return new QuotaFrame(levels, estimate, nowMs);
      }
    }
    return null;
  }

  /** The start (epoch ms) of the period of level {@code i}'s quota {@code j}. */
  long start(int i, int j) {
    return starts[i][j];
  }

  /**
   * The counters' keys, level after level, from each level's state key ({@code stateKeys[i]}).
   */
  String[] keys(String[] stateKeys) {
    String[] keys = new String[count];
    int k = 0;
    for (int i = 0; i < levels.size(); i++) {
      List<QuotaLimit> quotas = levels.get(i).quotas();
      for (int j = 0; j < quotas.size(); j++) {
        keys[k++] = RedisKeys.quota(stateKeys[i], quotas.get(j).stateId(), starts[i][j]);
      }
    }
    return keys;
  }

  /**
   * The quota argument of {@code acquire.lua}, a bulk string of little-endian doubles: per level,
   * its number of quotas, then per quota the index in KEYS of its counter ({@code firstKey} for
   * the first quota, then one by one), the estimate's amount, its part in flight until settled
   * ({@link #inFlight}), the limit, 1 if enforced, ms until
   * its period ends, ms to wait when only the calls in flight deny ({@link #IN_FLIGHT_RETRY_MS}),
   * the counter's time to live (ms until a day after the period's end; relative, so that Redis's
   * own clock never shortens it), its number of thresholds, then per threshold its amount and
   * percentage.
   */
  byte[] acquireArg(int firstKey) {
    List<Double> v = new ArrayList<>();
    int key = firstKey;
    for (int i = 0; i < levels.size(); i++) {
      List<QuotaLimit> quotas = levels.get(i).quotas();
      v.add((double) quotas.size());
      for (int j = 0; j < quotas.size(); j++) {
        QuotaLimit q = quotas.get(j);
        v.add((double) key++);
        v.add((double) q.unit().amount(estimate));
        v.add((double) inFlight(q, estimate));
        v.add((double) q.limit());
        v.add(q.enforce() ? 1.0 : 0.0);
        v.add((double) Math.max(1, ends[i][j] - nowMs));
        v.add((double) IN_FLIGHT_RETRY_MS);
        v.add((double) (ends[i][j] + RETENTION_MS - nowMs));
        v.add((double) q.thresholds().size());
        for (int t = 0; t < q.thresholds().size(); t++) {
          v.add((double) q.thresholdAmount(t));
          v.add((double) q.thresholds().get(t));
        }
      }
    }
    double[] values = new double[v.size()];
    for (int i = 0; i < values.length; i++) {
      values[i] = v.get(i);
    }
    return ScriptArgs.bulkOfDoubles(values);
  }

  /**
   * The statuses from the quota part of a reply: per quota, in the argument's order, used after
   * the decision, the estimates in flight, 1 if exceeded, the number of thresholds crossed, then their percentages; null
   * when the reply has none (a call that ran after its deadline).
   */
  List<QuotaStatus> statuses(ByteBuffer part) {
    ByteBuffer b = part.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    List<QuotaStatus> statuses = new ArrayList<>(count);
    for (int i = 0; i < levels.size(); i++) {
      Budget level = levels.get(i);
      List<QuotaLimit> quotas = level.quotas();
      for (int j = 0; j < quotas.size(); j++) {
        long used = (long) b.getDouble();
        long pending = (long) b.getDouble();
        boolean exceeded = b.getDouble() == 1;
        int crossedCount = (int) b.getDouble();
        List<Integer> crossed = new ArrayList<>(crossedCount);
        for (int t = 0; t < crossedCount; t++) {
          crossed.add((int) b.getDouble());
        }
        statuses.add(new QuotaStatus(level.name(), quotas.get(j), Math.max(0, used),
            Math.max(0, pending), starts[i][j], ends[i][j], crossed, exceeded));
      }
    }
    return statuses;
  }

  /**
   * The part of a call's amount that stays in flight until it is settled: its model tokens or
   * cost; a request is used at once (as in memory).
   */
  static long inFlight(QuotaLimit q, Consumption estimate) {
    return q.unit() == QuotaUnit.REQUESTS ? 0 : q.unit().amount(estimate);
  }

  /** A calendar: a period in a zone. */
  private record Calendar(QuotaPeriod period, ZoneId zone) {}

  /**
   * The period each calendar was last asked for ({start, end}), so that a call in the same period
   * computes no date; bounded by {@link #MAX_CALENDARS} (calendars are configuration).
   */
  private static final ConcurrentHashMap<Calendar, long[]> LAST = new ConcurrentHashMap<>();
  private static final int MAX_CALENDARS = 256;

  /**
   * The start and end (epoch ms) of the period of quota {@code q} that holds {@code atMs}; the
   * array is shared: never written.
   */
  static long[] period(QuotaLimit q, long atMs) {
    Calendar c = new Calendar(q.period(), q.zone());
    long[] last = LAST.get(c);
    if (last != null && last[0] <= atMs && atMs < last[1]) {
      return last;
    }
    Instant at = Instant.ofEpochMilli(atMs);
    long[] period = {q.period().start(at, q.zone()).toEpochMilli(),
        q.period().end(at, q.zone()).toEpochMilli()};
    if (last != null || LAST.size() < MAX_CALENDARS) {
      LAST.put(c, period);
    }
    return period;
  }

  /** Whether a level of {@code levels} has a quota. */
  static boolean anyQuota(List<Budget> levels) {
    for (Budget b : levels) {
      if (!b.quotas().isEmpty()) {
        return true;
      }
    }
    return false;
  }
}
