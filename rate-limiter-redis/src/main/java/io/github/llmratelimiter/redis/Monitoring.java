package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.cluster.SlotHash;

/**
 * The bounded structures that {@code acquire.lua} keeps for monitoring, in the decision's own
 * script, and that {@link RedisAdministration} reads instead of scanning the keyspace.
 *
 * <p>They live in <em>buckets</em>: a standalone server or a Sentinel group has one; a Cluster has
 * one per hash slot, since a script may only touch keys of its call's slot. A bucket's keys carry a
 * hash tag of the root key's slot ({@link #tag}), not the root key itself, so that every call of
 * the slot writes the same few keys. Per bucket and budget ({@link RedisKeys#monitor}):
 * <ul>
 *   <li>{@code ~top:<E>:<p>}, the busiest levels: a sorted set of level state keys, each scored by
 *       its use ({@code KeySnapshot#utilization}) as a decision in period {@code p} left it (as the
 *       decision found it for a deny), capped at {@link #cap} members: a decision that adds a
 *       member drops the lowest beyond the cap. A level is written only when its use moves to
 *       another whole percent or at its first decision of the period (a mark in its state's
 *       header, lib.lua), so a score is within a percent of the use at its last decision;
 *   <li>{@code ~keys:<E>:<p>}, a HyperLogLog of the key parts that made a call in period {@code
 *       p};
 *   <li>{@code ~spend:<quota>:<start>}, per quota and period, the biggest spenders: a sorted set of
 *       quota counters scored by what was used after their last charge, capped at {@link #cap}.
 * </ul>
 * A period {@code p} is {@code floor(now / E)}, {@code E} being {@link #periodMs} of the budget's
 * defaults, on the store's clock (its ticker, else this process's wall clock); period keys live
 * {@code 2E}, time to be read in their period and the next. The structures of a budget whose state
 * never expires (a bucket that never refills) have one period and no expiry.
 */
final class Monitoring {

  /** The buckets of a Cluster: one per hash slot. */
  static final int CLUSTER_BUCKETS = SlotHash.SLOT_COUNT;
  /** The members a sorted set keeps on a standalone server or a Sentinel group (one bucket). */
  static final int STANDALONE_CAP = 1024;
  /** The members a sorted set keeps per hash slot on a Cluster. */
  static final int CLUSTER_CAP = 32;
  /** The shortest period. */
  static final long MIN_PERIOD_MS = 60_000;
  /** The hash tag of the single bucket of a standalone server. */
  private static final String STANDALONE_TAG = "~";

  private final RedisKeys layout;
  private final boolean cluster;
  /** The members a sorted set keeps. */
  final int cap;

  Monitoring(RedisKeys layout, boolean cluster) {
    this.layout = layout;
    this.cluster = cluster;
    this.cap = cluster ? CLUSTER_CAP : STANDALONE_CAP;
  }

  /** The number of buckets. */
  int buckets() {
    return cluster ? CLUSTER_BUCKETS : 1;
  }

  /** The bucket of a call, from one of its keys (all share one hash slot). */
  int bucket(String redisKey) {
    return cluster ? SlotHash.getSlot(redisKey) : 0;
  }

  /** The hash tag of a bucket: in the Cluster slot of that number. */
  String tag(int bucket) {
    return cluster ? SlotTags.TAGS[bucket] : STANDALONE_TAG;
  }

  /** The busiest levels of a budget in a bucket and period. */
  String busiest(int bucket, String budget, long periodMs, long period) {
    return layout.monitor(tag(bucket), budget, "top:" + periodMs + ":" + period);
  }

  /** The key estimate of a budget in a bucket and period. */
  String seen(int bucket, String budget, long periodMs, long period) {
    return layout.monitor(tag(bucket), budget, "keys:" + periodMs + ":" + period);
  }

  /** The biggest spenders of a quota ({@code stateId}) in a bucket and period. */
  String spenders(int bucket, String budget, String stateId, long startMs) {
    return layout.monitor(tag(bucket), budget,
        "spend:" + RedisKeys.encode(stateId) + ":" + startMs);
  }

  /** The spenders set that holds a quota counter ({@link RedisKeys#quota}) of a budget. */
  String spendersOf(int bucket, String budget, String counter) {
    return layout.monitor(tag(bucket), budget, "spend:" + counter.substring(
        counter.lastIndexOf(":q:") + 3));
  }

  /** The period that holds {@code nowMs} for a period length (0: the one period). */
  static long period(long periodMs, long nowMs) {
    return periodMs == 0 ? 0 : Math.floorDiv(nowMs, periodMs);
  }

  /**
   * The period length of a budget, from its defaults: the longest time a level's state outlives its
   * last call (its window, its bucket's refill from empty, its model-token window, its lease), in
   * whole seconds, at least {@link #MIN_PERIOD_MS}; 0 when its state may never expire (a bucket
   * that never refills). Every key with state was therefore called in this period or the last.
   */
  static long periodMs(Budget budget) {
    Budget d = budget.defaults();
    double ms = 0;
    WindowLimit w = d.window();
    if (w != null) {
      ms = Math.max(ms, w.window().toMillis());
    }
    BucketLimit b = d.bucket();
    if (b != null) {
      if (b.refillPerSecond() == 0) {
        return 0;
      }
      ms = Math.max(ms, b.capacity() / b.refillPerSecond() * 1000);
    }
    ModelTokenLimit m = d.modelTokens();
    if (m != null) {
      ms = Math.max(ms, m.window().toMillis());
    }
    ConcurrencyLimit c = d.concurrency();
    if (c != null) {
      ms = Math.max(ms, c.leaseTimeout().toMillis());
    }
    if (ms >= 1e15) {
      return 0;
    }
    return Math.max(MIN_PERIOD_MS, (long) Math.ceil(ms / 1000) * 1000);
  }

  /**
   * The time to live of a budget's period keys in ms: two periods, at least {@code minTtlMs}
   * (ticker time need not follow Redis's clock); 0 (no expiry) for the one period.
   */
  static long ttlMs(long periodMs, long minTtlMs) {
    return periodMs == 0 ? 0 : Math.max(2 * periodMs, minTtlMs);
  }

  /**
   * A hash tag for each Cluster slot: {@code ~} and the first base-36 number whose tag falls in the
   * slot; the same in every process.
   */
  private static final class SlotTags {
    static final String[] TAGS = new String[CLUSTER_BUCKETS];

    static {
      int found = 0;
      for (int i = 0; found < CLUSTER_BUCKETS; i++) {
        String tag = "~" + Integer.toString(i, 36);
        int slot = SlotHash.getSlot(tag);
        if (TAGS[slot] == null) {
          TAGS[slot] = tag;
          found++;
        }
      }
    }
  }
}
