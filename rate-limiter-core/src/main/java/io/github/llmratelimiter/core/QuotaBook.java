package io.github.llmratelimiter.core;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The in-memory store's quota state: per budget name, key, quota and period, what was used and
 * which thresholds were reported. A counter is kept until a day after its period ends, so that a
 * call settled after the boundary is settled in the period it was charged in.
 *
 * <p>A decision reads and charges a key's counters while it holds the key's entry lock, so no
 * other decision on the key interleaves; settling a reservation changes one counter at a time
 * under the counter's own lock, and never holds an entry lock.
 */
final class QuotaBook {

  /** How long a counter is kept after its period ends, for late settlements. */
  static final long RETENTION_MS = 86_400_000L;

  /** Identifies one counter. */
  record Id(String budget, String key, String quota, long start) {}

  /**
   * One key's use of one quota in one period; guarded by itself. {@code used} is what the checks
   * read: the settled usage and the estimates in flight; {@code pending} is those estimates.
   */
  static final class Counter {
    final long end;
    private long used;
    private long pending;
    /** Bit {@code p} set: the threshold of {@code p} percent was reported (p from 1 to 100). */
    private long firedLow;
    private long firedHigh;

    Counter(long end) {
      this.end = end;
    }

    synchronized long used() {
      return used;
    }

    synchronized long pending() {
      return pending;
    }

    /** What the settled calls used: {@code used} without the estimates in flight. */
    synchronized long settled() {
      return Math.max(0, used - pending);
    }

    /**
     * An admitted call's estimate: used, and in flight when it is an estimate ({@code pending}; a
     * request is one request, used at once).
     */
    synchronized void reserve(long amount, boolean pending) {
      used = sum(used, amount);
      if (pending) {
        this.pending = sum(this.pending, amount);
      }
    }

    /** A call settled: its estimate leaves the calls in flight, its usage replaces it in use. */
    synchronized void settle(long estimate, long actual, boolean pending) {
      used = Math.max(0, sum(used, actual) - estimate);
      if (pending) {
        this.pending = Math.max(0, this.pending - estimate);
      }
    }

    private static long sum(long a, long b) {
      long s = a + b;
      return s < a ? Long.MAX_VALUE : s;
    }

    /** Marks threshold {@code percent} reported; returns whether it was not before. */
    synchronized boolean fire(int percent) {
      long bit = 1L << (percent & 63);
      if (percent < 64) {
        boolean fresh = (firedLow & bit) == 0;
        firedLow |= bit;
        return fresh;
      }
      boolean fresh = (firedHigh & bit) == 0;
      firedHigh |= bit;
      return fresh;
    }

    synchronized long[] state() {
      return new long[] {used, firedLow, firedHigh};
    }

    /** Restores a saved counter: estimates that were in flight count as used (nobody settles them). */
    synchronized void restore(long used, long firedLow, long firedHigh) {
      this.used = used;
      this.pending = 0;
      this.firedLow = firedLow;
      this.firedHigh = firedHigh;
    }
  }

  private final ConcurrentHashMap<Id, Counter> counters = new ConcurrentHashMap<>();
  /** The most counters a decision creates: past it, a new key is refused until periods expire. */
  private final long maxCounters;

  /** A book of at most {@code maxCounters} counters created by decisions. */
  QuotaBook(long maxCounters) {
    this.maxCounters = maxCounters;
  }

  /** The counter of a period, created if need be (a settlement's: always). */
  Counter counter(String budget, String key, String quotaId, long startMs, long endMs) {
    Id id = new Id(budget, key, quotaId, startMs);
    Counter c = counters.get(id);
    return c != null ? c : counters.computeIfAbsent(id, i -> new Counter(endMs));
  }

  /**
   * The counter of a period for a decision: created if need be while the book holds fewer than
   * its most counters, else null.
   */
  @Nullable Counter counterIfRoom(String budget, String key, String quotaId, long startMs,
      long endMs) {
    Id id = new Id(budget, key, quotaId, startMs);
    Counter c = counters.get(id);
    if (c != null) {
      return c;
    }
    return counters.mappingCount() >= maxCounters ? null
        : counters.computeIfAbsent(id, i -> new Counter(endMs));
  }

  /** The counter of that period if the book holds it. */
  @Nullable Counter existing(String budget, String key, String quotaId, long startMs) {
    return counters.get(new Id(budget, key, quotaId, startMs));
  }

  /** Drops the counters of periods that ended more than {@link #RETENTION_MS} before {@code nowMs}. */
  void expire(long nowMs) {
    counters.values().removeIf(c -> c.end + RETENTION_MS <= nowMs);
  }

  /** Forgets a key's counters of one budget name. */
  boolean reset(String budget, String key) {
    return counters.keySet().removeIf(id -> id.budget.equals(budget) && id.key.equals(key));
  }

  /** Forgets every counter. */
  void resetAll() {
    counters.clear();
  }

  /** The keys that used the most of a quota in the period that starts at {@code startMs}. */
  List<QuotaSpend> top(String budget, QuotaLimit q, long startMs, int limit) {
    String quota = q.stateId();
    PriorityQueue<QuotaSpend> best =
        new PriorityQueue<>(Comparator.comparingLong(QuotaSpend::used));
    for (Map.Entry<Id, Counter> e : counters.entrySet()) {
      Id id = e.getKey();
      if (id.start == startMs && id.budget.equals(budget) && id.quota.equals(quota)) {
        long used = e.getValue().used();
        if (used > 0 && (best.size() < limit || used > best.peek().used())) {
          best.add(new QuotaSpend(id.key, used));
          if (best.size() > limit) {
            best.poll();
          }
        }
      }
    }
    List<QuotaSpend> top = new ArrayList<>(best);
    top.sort(Comparator.comparingLong(QuotaSpend::used).reversed()
        .thenComparing(QuotaSpend::key));
    return top;
  }

  /** Every counter, for a snapshot. */
  Map<Id, Counter> all() {
    return counters;
  }

  /** Puts a counter read from a snapshot, replacing any. */
  void restore(Id id, long end, long used, long firedLow, long firedHigh) {
    Counter c = new Counter(end);
    c.restore(used, firedLow, firedHigh);
    counters.put(id, c);
  }

  /** How many counters the book holds. */
  int size() {
    return counters.size();
  }
}
