package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The administration of an {@link InMemoryStore}: reads a key's state under its entry's lock, lists
 * the busiest keys among the candidates maintenance ranked, and forgets keys.
 */
final class InMemoryAdministration implements StoreAdministration {

  private final InMemoryStore store;
  private final InMemoryPlans plans;
  private final Ticker ticker;
  /** Entries {@link #top} has read since the store was created (a test's measure of its work). */
  private final AtomicLong topReads = new AtomicLong();

  InMemoryAdministration(InMemoryStore store, InMemoryPlans plans, Ticker ticker) {
    this.store = store;
    this.plans = plans;
    this.ticker = ticker;
  }

  @Override
  public Optional<KeySnapshot> inspect(Budget budget, String key) {
    Args.notBlank("key", key);
    BudgetTable t = store.table(budget);
    KeyEntry e = t.keys.existing(key);
    return e == null ? Optional.empty() : Optional.ofNullable(snapshot(t, e));
  }

  /** The entry's state now, read under its lock; null if it was retired meanwhile. */
  private @Nullable KeySnapshot snapshot(BudgetTable t, KeyEntry e) {
    e.lock();
    try {
      if (e.retired) {
        return null;
      }
      long now = ticker.read();
      t.normalize(e, now);
      KeySnapshot s = new KeySnapshot(
          t.name, e.key, t.hasWindow ? e.size : 0, t.limit, t.hasBucket ? e.tokens : 0,
          t.capacity, t.waitMs(e, now, 1.0), t.hasModelTokens ? t.usedModelTokens(e) : 0,
          t.modelTokenLimit, e.leases == null ? 0 : e.leases.size(), t.concurrencyLimit);
      t.forgetIfFresh(e);
      return s;
    } finally {
      e.unlock();
    }
  }

  @Override
  public List<KeySnapshot> top(Budget budget, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
    }
    BudgetTable t = store.table(budget);
    KeyEntry[] candidates = t.keys.topCandidates();
    Set<KeyEntry> seen = Collections.newSetFromMap(new IdentityHashMap<>(candidates.length));
    List<KeySnapshot> ranked = new ArrayList<>(candidates.length);
    for (KeyEntry e : candidates) {
      if (seen.add(e)) {
        topReads.incrementAndGet();
        KeySnapshot s = snapshot(t, e);
        if (s != null) {
          ranked.add(s);
        }
      }
    }
    ranked.sort(KeySnapshot.BUSIEST_FIRST);
    return List.copyOf(ranked.subList(0, Math.min(limit, ranked.size())));
  }

  /** How many entries {@link #top} has read since the store was created. */
  long topReads() {
    return topReads.get();
  }

  @Override
  public boolean reset(Budget budget, String key) {
    Args.notBlank("key", key);
    boolean quotas = store.quotaBook().reset(budget.name(), key);
    return store.table(budget).keys.reset(key) | quotas;
  }

  @Override
  public void resetAll() {
    for (BudgetTable t : store.allTables()) {
      t.keys.resetAll();
    }
    store.quotaBook().resetAll();
    plans.clear();
  }

  @Override
  public List<QuotaStatus> quotas(Budget budget, String key) {
    Args.notNull("budget", budget);
    Args.notBlank("key", key);
    List<QuotaStatus> statuses = new ArrayList<>();
    for (QuotaLimit q : budget.quotas()) {
      while (true) {
        // the period read before and after the counter: a period that ended meanwhile is read again
        Instant now = store.wallClock().instant();
        long start = q.period().start(now, q.zone()).toEpochMilli();
        QuotaBook.Counter c = store.quotaBook().existing(budget.name(), key, q.stateId(), start);
        long used = c == null ? 0 : c.used();
        long pending = c == null ? 0 : c.pending();
        if (q.period().start(store.wallClock().instant(), q.zone()).toEpochMilli() == start) {
          statuses.add(new QuotaStatus(budget.name(), q, used, pending, start,
              q.period().end(now, q.zone()).toEpochMilli(), List.of(), used >= q.limit()));
          break;
        }
      }
    }
    return statuses;
  }

  @Override
  public List<QuotaSpend> topSpenders(Budget budget, QuotaLimit quota, int limit) {
    Args.notNull("budget", budget);
    Args.notNull("quota", quota);
    Args.positive("limit", limit);
    long start = quota.period().start(store.wallClock().instant(), quota.zone()).toEpochMilli();
    return store.quotaBook().top(budget.name(), quota, start, limit);
  }

  @Override
  public long trackedKeys(Budget budget) {
    return store.table(budget).keys.size();
  }
}
