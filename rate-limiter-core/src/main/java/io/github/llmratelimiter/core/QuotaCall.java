package io.github.llmratelimiter.core;

import java.util.ArrayList;
import java.util.List;

/**
 * The quota step of one in-memory decision: the counters of every quota of every level for the
 * period that holds the decision's instant, checked and charged while the call holds every
 * level's entry lock.
 */
final class QuotaCall {

  /**
   * The wait of a quota deny that only the estimates of calls in flight cause: they are settled
   * when their calls end, which no clock tells.
   */
  static final long IN_FLIGHT_RETRY_MS = 1_000L;

  private final BudgetTable[] tables;
  private final List<String> keys;
  private final Consumption estimate;
  final long nowMs;
  /** Per level, per quota: its counter, its period's start and end. */
  private final QuotaBook.Counter[][] counters;
  private final long[][] starts;
  private final long[][] ends;
  /** Per level, per quota: whether the estimate did not fit (checked levels only). */
  private final boolean[][] exceeded;
  /** The first level a new counter found the book full at, or -1. */
  final int full;

  QuotaCall(QuotaBook book, BudgetTable[] tables, List<String> keys, Consumption estimate,
      long nowMs) {
    this.tables = tables;
    this.keys = keys;
    this.estimate = estimate;
    this.nowMs = nowMs;
    int n = tables.length;
    counters = new QuotaBook.Counter[n][];
    starts = new long[n][];
    ends = new long[n][];
    exceeded = new boolean[n][];
    int fullAt = -1;
    for (int i = 0; i < n; i++) {
      long[] periods = tables[i].quotaPeriods(nowMs);
      List<QuotaLimit> quotas = tables[i].budget.quotas();
      int m = quotas.size();
      counters[i] = new QuotaBook.Counter[m];
      starts[i] = new long[m];
      ends[i] = new long[m];
      exceeded[i] = new boolean[m];
      for (int j = 0; j < m; j++) {
        QuotaLimit q = quotas.get(j);
        starts[i][j] = periods[2 * j];
        ends[i][j] = periods[2 * j + 1];
        counters[i][j] = book.counterIfRoom(tables[i].name, keys.get(i), tables[i].quotaIds[j],
            starts[i][j], ends[i][j]);
        if (counters[i][j] == null && fullAt < 0) {
          fullAt = i;
        }
      }
    }
    full = fullAt;
  }

  /**
   * Checks level {@code i}'s quotas against the estimate and records which did not fit; returns
   * whether an enforced one denies.
   */
  boolean denies(int i) {
    List<QuotaLimit> quotas = tables[i].budget.quotas();
    boolean denies = false;
    for (int j = 0; j < quotas.size(); j++) {
      QuotaLimit q = quotas.get(j);
      long amount = q.unit().amount(estimate);
      long used = counters[i][j].used();
      boolean over = used > q.limit() - amount;
      exceeded[i][j] = over;
      denies |= over && q.enforce();
    }
    return denies;
  }

  /** Whether any level's enforced quota denies (every level checked). */
  boolean deniesAny() {
    boolean denies = false;
    for (int i = 0; i < tables.length; i++) {
      denies |= denies(i);
    }
    return denies;
  }

  /**
   * Milliseconds until every enforced quota of level {@code i} that denies admits the call if
   * nothing else arrives: the latest over them of the time until its period ends, or, for a quota
   * whose settled use leaves room for the estimate (the estimates of calls in flight are what
   * does not fit: they settle when those calls end, usually below them), {@link
   * #IN_FLIGHT_RETRY_MS}; 0 if none denies.
   */
  long retryMs(int i) {
    List<QuotaLimit> quotas = tables[i].budget.quotas();
    long retry = 0;
    for (int j = 0; j < quotas.size(); j++) {
      QuotaLimit q = quotas.get(j);
      if (exceeded[i][j] && q.enforce()) {
        boolean inFlight = counters[i][j].settled() <= q.limit() - q.unit().amount(estimate);
        retry = Math.max(retry, inFlight ? IN_FLIGHT_RETRY_MS : Math.max(1, ends[i][j] - nowMs));
      }
    }
    return retry;
  }

  /** Charges level {@code i}'s quotas with the estimate. */
  void charge(int i) {
    List<QuotaLimit> quotas = tables[i].budget.quotas();
    for (int j = 0; j < quotas.size(); j++) {
      QuotaUnit unit = quotas.get(j).unit();
      counters[i][j].reserve(unit.amount(estimate), unit != QuotaUnit.REQUESTS);
    }
  }

  /** Charges every level's quotas with the estimate. */
  void chargeAll() {
    for (int i = 0; i < tables.length; i++) {
      charge(i);
    }
  }

  /**
   * Where every quota stands after the decision, root first; marks and reports each threshold
   * that the settled use (with this call's estimate when {@code admitted}) now reaches and no
   * decision reported before in the period.
   */
  List<QuotaStatus> statuses(boolean admitted) {
    List<QuotaStatus> statuses = new ArrayList<>();
    for (int i = 0; i < tables.length; i++) {
      List<QuotaLimit> quotas = tables[i].budget.quotas();
      for (int j = 0; j < quotas.size(); j++) {
        QuotaLimit q = quotas.get(j);
        QuotaBook.Counter c = counters[i][j];
        long used = c.used();
        long pending = c.pending();
        // the settled use and, when admitted, this call's own estimate: other calls in flight
        // count once they settle (their estimates are usually above what they use)
        long amount = admitted ? q.unit().amount(estimate) : 0;
        long reached = Math.min(used, Math.max(0, used - pending) + amount);
        List<Integer> crossed = List.of();
        for (int k = 0; k < q.thresholds().size(); k++) {
          if (reached >= q.thresholdAmount(k) && c.fire(q.thresholds().get(k))) {
            crossed = crossed.isEmpty() ? new ArrayList<>() : crossed;
            crossed.add(q.thresholds().get(k));
          }
        }
        statuses.add(new QuotaStatus(tables[i].name, q, used, pending, starts[i][j], ends[i][j],
            crossed,
            exceeded[i][j]));
      }
    }
    return statuses;
  }
}
