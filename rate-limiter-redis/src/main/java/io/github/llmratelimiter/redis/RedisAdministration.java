package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaSpend;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.core.internal.Args;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.KeyValue;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;

/**
 * The administration of a {@link LuaRateLimitStore}, straight on Redis: {@link #top}, {@link
 * #trackedKeys} and {@link #topSpenders} read the bounded structures the decisions keep ({@link
 * Monitoring}), a fixed number of commands per bucket whatever the number of keys, and never
 * {@code SCAN}; a key's state is read with {@code inspect.lua}. {@link #inspect}, {@link #reset} and
 * {@link #quotas} look a key up under every root key with {@code SCAN} (on every master of a
 * Cluster), {@link #quotas} only for a key it finds no counter of as a root; {@link #resetAll}
 * scans for every key of the prefix. A lower level of a hierarchy keeps its state per root key (the
 * hash tag): a key's most used state is the one reported. A Redis failure surfaces as Lettuce's
 * {@code RedisException}, which {@link GuardedAdministration} turns into the fallback's answer.
 *
 * <p>Quota counters are read for the period that holds the store's wall clock now: a key used as
 * a root (the first level of its calls) by direct reads, one {@code HMGET} per quota; a key used
 * only at a lower level, whose counters lie under the roots it was charged under, by a {@code
 * SCAN} for them (as {@link #inspect} does), its most used counter per quota being reported.
 */
final class RedisAdministration implements StoreAdministration {

  static final LuaScript INSPECT = LuaScript.load("inspect.lua");
  private static final int SCAN_COUNT = 1000;

  private final LuaRateLimitStore store;
  private final RedisLink link;
  private final RedisKeys layout;
  private final Monitoring monitoring;

  RedisAdministration(LuaRateLimitStore store, RedisLink link, RedisKeys layout,
      Monitoring monitoring) {
    this.store = store;
    this.link = link;
    this.layout = layout;
    this.monitoring = monitoring;
  }

  @Override
  public Optional<KeySnapshot> inspect(Budget budget, String key) {
    Args.notBlank("key", key);
    store.budget(budget);
    return busiest(budget, key, layout.part(key),
        new LinkedHashSet<>(keysOf(budget, key).values()));
  }

  /**
   * The Redis keys that hold {@code key}'s state under {@code budget}, each with the part of its
   * root key.
   */
  private Map<String, String> keysOf(Budget budget, String key) {
    String keyPart = layout.part(key);
    Map<String, String> rootByRedisKey = new LinkedHashMap<>();
    for (String redisKey : scan(layout.pattern(budget.name(), key))) {
      String[] parts = layout.parse(redisKey);
      if (parts != null && parts[1].equals(keyPart)) {
        rootByRedisKey.put(redisKey, parts[0]);
      }
    }
    return rootByRedisKey;
  }

  /**
   * The most used state of a key (shown as {@code shown}, stored as {@code keyPart}) over the root
   * keys it was charged under.
   */
  private Optional<KeySnapshot> busiest(
      Budget budget, String shown, String keyPart, Set<String> rootParts) {
    KeySnapshot best = null;
    for (String rootPart : rootParts) {
      KeySnapshot s = snapshot(budget, rootPart, keyPart, shown);
      if (s != null && (best == null || s.utilization() > best.utilization())) {
        best = s;
      }
    }
    return Optional.ofNullable(best);
  }

  private @Nullable KeySnapshot snapshot(
      Budget budget, String rootPart, String keyPart, String shown) {
    ScriptBudget scripted = store.scripted(budget);
    String[] keys = scripted.levelKeys(layout.level(rootPart, budget.name(), keyPart));
    List<Object> r = INSPECT.run(link.commands(), LuaScript.list(), keys, store.timeNumbers(3),
        new byte[][] {scripted.levelArg}, 1);
    if (r.isEmpty()) {
      return null;
    }
    WindowLimit w = budget.window();
    BucketLimit b = budget.bucket();
    ModelTokenLimit m = budget.modelTokens();
    ConcurrencyLimit c = budget.concurrency();
    return new KeySnapshot(budget.name(), shown, asLong(r.get(0)), w == null ? 0 : w.limit(),
        asDouble(r.get(1)), b == null ? 0 : b.capacity(), asLong(r.get(2)), asLong(r.get(3)),
        m == null ? 0 : m.limit(), asLong(r.get(4)), c == null ? 0 : c.limit());
  }

  /**
   * {@inheritDoc}
   *
   * <p>The candidates are the members of the budget's busiest sets ({@link Monitoring}) of the
   * current period and the one before, in every bucket: from each set the {@code min(2 * limit, cap)}
   * with the highest recorded use (one {@code ZREVRANGE} per set), of which the {@code 2 * limit}
   * highest over all buckets are read now with {@code inspect.lua} and ranked on that state. A
   * set keeps the {@link Monitoring#cap} levels with the highest use their decisions recorded (a
   * level's use is recorded when it moves to another whole percent, and at its first decision of
   * the period; 1,024 on a standalone server or a Sentinel group, 32 per hash slot on a Cluster),
   * so a key whose use rose since its last decision, or one that was not among them then, may be
   * missing;
   * up to that many keys per set, the answer is exact. A key not called in the current period or
   * the last one is not listed. The cost is independent of the number of keys in Redis: {@code 2 *
   * buckets} commands (one bucket on a standalone server, 16,384 on a Cluster) and at most {@code 2
   * * limit} scripts.
   *
   * <p>When the store hashes keys (the default), the snapshots name each key by its hashed form
   * ({@link RedisRateLimitStore#hashedKey(String)}): the key in clear is not in Redis.
   */
  @Override
  public List<KeySnapshot> top(Budget budget, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
    }
    long periodMs = store.scripted(budget).monitorPeriodMs;
    long period = Monitoring.period(periodMs, store.monitorMillis());
    int per = (int) Math.min(2L * limit, monitoring.cap);
    String name = budget.name();
    List<List<ScoredValue<String>>> sets = perBucket((redis, b) -> {
      List<RedisFuture<List<ScoredValue<String>>>> reads = new ArrayList<>(2);
      reads.add(redis.zrevrangeWithScores(
          monitoring.busiest(b, name, periodMs, period), 0, per - 1));
      if (periodMs != 0) {
        reads.add(redis.zrevrangeWithScores(
            monitoring.busiest(b, name, periodMs, period - 1), 0, per - 1));
      }
      return reads;
    });
    Map<String, Set<String>> rootsByKey = new LinkedHashMap<>();
    for (String stateKey : best(sets, 2L * limit)) {
      String[] parts = layout.parse(stateKey);
      if (parts != null) {
        rootsByKey.computeIfAbsent(parts[1], k -> new LinkedHashSet<>()).add(parts[0]);
      }
    }
    List<KeySnapshot> all = new ArrayList<>();
    for (Map.Entry<String, Set<String>> e : rootsByKey.entrySet()) {
      busiest(budget, layout.shown(e.getKey()), e.getKey(), e.getValue()).ifPresent(all::add);
    }
    all.sort(KeySnapshot.BUSIEST_FIRST);
    return List.copyOf(all.subList(0, Math.min(limit, all.size())));
  }

  /**
   * The members with the highest scores over every set read, each once at its highest score, at
   * most {@code most}, highest first (ties by member).
   */
  private static List<String> best(List<List<ScoredValue<String>>> sets, long most) {
    Map<String, Double> scores = new HashMap<>();
    for (List<ScoredValue<String>> set : sets) {
      for (ScoredValue<String> v : set) {
        scores.merge(v.getValue(), v.getScore(), Math::max);
      }
    }
    List<Map.Entry<String, Double>> ranked = new ArrayList<>(scores.entrySet());
    ranked.sort(Map.Entry.<String, Double>comparingByValue().reversed()
        .thenComparing(Map.Entry.comparingByKey()));
    List<String> best = new ArrayList<>();
    for (int i = 0; i < ranked.size() && i < most; i++) {
      best.add(ranked.get(i).getKey());
    }
    return best;
  }

  /**
   * Sends the commands {@code reads} makes for each bucket, all pipelined, and returns their
   * replies once all came, bucket after bucket.
   *
   * @throws io.lettuce.core.RedisException if one fails, or not all come within the link's timeout
   */
  private <T> List<T> perBucket(
      BiFunction<RedisClusterAsyncCommands<String, String>, Integer, List<RedisFuture<T>>> reads) {
    link.commands(); // connected, or throws
    RedisClusterAsyncCommands<String, String> redis = link.async().join();
    List<RedisFuture<T>> sent = new ArrayList<>();
    for (int b = 0; b < monitoring.buckets(); b++) {
      sent.addAll(reads.apply(redis, b));
    }
    LettuceFutures.awaitAll(link.timeout(), sent.toArray(new RedisFuture<?>[0]));
    List<T> replies = new ArrayList<>(sent.size());
    for (RedisFuture<T> f : sent) {
      replies.add(f.toCompletableFuture().join());
    }
    return replies;
  }

  /**
   * {@inheritDoc}
   *
   * <p>It deletes the key's state and its quota counters (every quota, every period) under every
   * root key, found with {@code SCAN}, and takes them out of the busiest and spenders sets ({@link
   * Monitoring}) of the current period and the one before.
   */
  @Override
  public boolean reset(Budget budget, String key) {
    Args.notBlank("key", key);
    long periodMs = store.scripted(budget).monitorPeriodMs;
    long period = Monitoring.period(periodMs, store.monitorMillis());
    Set<String> states = keysOf(budget, key).keySet();
    List<String> counters = scan(layout.quotaPattern(budget.name(), key));
    RedisClusterCommands<String, String> redis = link.commands();
    for (String state : states) {
      int bucket = monitoring.bucket(state);
      redis.zrem(monitoring.busiest(bucket, budget.name(), periodMs, period), state);
      redis.zrem(monitoring.busiest(bucket, budget.name(), periodMs, period - 1), state);
    }
    for (String counter : counters) {
      redis.zrem(monitoring.spendersOf(monitoring.bucket(counter), budget.name(), counter),
          counter);
    }
    Set<String> found = new LinkedHashSet<>(states);
    found.addAll(counters);
    return !found.isEmpty() && redis.del(found.toArray(String[]::new)) > 0;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Reads the counters of the key as a root with one {@code HMGET} per quota (of the key in
   * clear, else, for a key in the hashed form {@link #top} and {@link #topSpenders} name keys by,
   * of that form); when it has none there (a key used only at a lower level), finds them under
   * every root with one {@code SCAN} over the keyspace (on every master of a Cluster) and reports
   * the most used per quota.
   */
  @Override
  public List<QuotaStatus> quotas(Budget budget, String key) {
    Args.notBlank("key", key);
    store.budget(budget);
    List<QuotaLimit> quotas = budget.quotas();
    if (quotas.isEmpty()) {
      return List.of();
    }
    while (true) {
      // the periods read before and after the counters: a period that ended meanwhile is read again
      long[][] periods = periods(quotas, store.wallClock().millis());
      List<QuotaStatus> statuses = quotas(budget, key, quotas, periods);
      if (Arrays.deepEquals(periods, periods(quotas, store.wallClock().millis()))) {
        return statuses;
      }
    }
  }

  private static long[][] periods(List<QuotaLimit> quotas, long nowMs) {
    long[][] periods = new long[quotas.size()][];
    for (int j = 0; j < quotas.size(); j++) {
      periods[j] = QuotaFrame.period(quotas.get(j), nowMs);
    }
    return periods;
  }

  /** The statuses of a key's quotas in the given periods. */
  private List<QuotaStatus> quotas(Budget budget, String key, List<QuotaLimit> quotas,
      long[][] periods) {
    String part = layout.part(key);
    RedisClusterCommands<String, String> redis = link.commands();
    long[] used = new long[quotas.size()];
    long[] pending = new long[quotas.size()];
    boolean found = readRoot(redis, budget, part, quotas, periods, used, pending)
        // the hashed form top and topSpenders name a key by
        || layout.hashed() && RedisKeys.isHash(key)
            && readRoot(redis, budget, key, quotas, periods, used, pending);
    if (!found) {
      Map<String, Integer> index = new HashMap<>();
      for (int j = 0; j < quotas.size(); j++) {
        index.put(":q:" + RedisKeys.encode(quotas.get(j).stateId()) + ":" + periods[j][0], j);
      }
      for (String redisKey : scan(layout.quotaPattern(budget.name(), key))) {
        String[] parts = layout.parseQuota(redisKey);
        Integer j = parts == null || !parts[1].equals(part) ? null
            : index.get(redisKey.substring(redisKey.indexOf(":q:")));
        long[] counter = j == null ? null : counter(redis, redisKey);
        if (counter != null && counter[0] > used[j]) {
          used[j] = counter[0];
          pending[j] = counter[1];
        }
      }
    }
    List<QuotaStatus> statuses = new ArrayList<>(quotas.size());
    for (int j = 0; j < quotas.size(); j++) {
      QuotaLimit q = quotas.get(j);
      long u = Math.max(0, used[j]);
      statuses.add(new QuotaStatus(budget.name(), q, u, Math.max(0, pending[j]), periods[j][0],
          periods[j][1], List.of(), u >= q.limit()));
    }
    return statuses;
  }

  /**
   * Reads the counters of the key whose part is {@code part} as a root into {@code used} and
   * {@code pending}; returns whether it has any.
   */
  private boolean readRoot(RedisClusterCommands<String, String> redis, Budget budget,
      String part, List<QuotaLimit> quotas, long[][] periods, long[] used, long[] pending) {
    String state = layout.level(part, budget.name(), part)[0];
    boolean found = false;
    for (int j = 0; j < quotas.size(); j++) {
      long[] counter = counter(redis,
          RedisKeys.quota(state, quotas.get(j).stateId(), periods[j][0]));
      if (counter != null) {
        used[j] = counter[0];
        pending[j] = counter[1];
        found = true;
      }
    }
    return found;
  }

  /** A quota counter's {used, estimates in flight}, or null when it does not exist. */
  private static long @Nullable [] counter(RedisClusterCommands<String, String> redis,
      String redisKey) {
    List<KeyValue<String, String>> fields = redis.hmget(redisKey, "u", "p");
    String u = fields.get(0).getValueOrElse(null);
    if (u == null) {
      return null;
    }
    String p = fields.get(1).getValueOrElse(null);
    return new long[] {Long.parseLong(u), p == null ? 0 : Long.parseLong(p)};
  }

  /**
   * {@inheritDoc}
   *
   * <p>The candidates are the members of the quota's spenders sets of its current period
   * ({@link Monitoring}), in every bucket: from each set the {@code min(2 * limit, cap)} with
   * the most used at their last charge (one {@code ZREVRANGE} per set), of which the {@code 2 * limit} most
   * over all buckets have their counter read now (one {@code HGET} each) and are ranked on it. A
   * set keeps the {@link Monitoring#cap} counters that had used the most at their last charge
   * (1,024 on a standalone server or a Sentinel group, 32 per hash slot on a Cluster); up to that
   * many spenders per set, the answer is exact. The cost is independent of the number of keys in
   * Redis: one command per bucket (one bucket on a standalone server, 16,384 on a Cluster) and at
   * most {@code 2 * limit} more. A key charged under several root keys counts its most used
   * counter. When the store hashes keys (the default), each key is named by its hashed form
   * ({@link RedisRateLimitStore#hashedKey}).
   */
  @Override
  public List<QuotaSpend> topSpenders(Budget budget, QuotaLimit quota, int limit) {
    Args.notNull("quota", quota);
    Args.positive("limit", limit);
    store.budget(budget);
    long start = QuotaFrame.period(quota, store.wallClock().millis())[0];
    int per = (int) Math.min(2L * limit, monitoring.cap);
    String name = budget.name();
    List<List<ScoredValue<String>>> sets = perBucket((redis, b) -> List.of(
        redis.zrevrangeWithScores(monitoring.spenders(b, name, quota.stateId(), start), 0,
            per - 1)));
    List<String> counters = best(sets, 2L * limit);
    RedisClusterCommands<String, String> redis = link.commands();
    Map<String, Long> used = new HashMap<>();
    for (String counter : counters) {
      String[] parts = layout.parseQuota(counter);
      String u = parts == null ? null : redis.hget(counter, "u");
      if (u != null && Long.parseLong(u) > 0) {
        used.merge(parts[1], Long.parseLong(u), Math::max);
      }
    }
    List<QuotaSpend> top = new ArrayList<>(used.size());
    for (Map.Entry<String, Long> e : used.entrySet()) {
      top.add(new QuotaSpend(layout.shown(e.getKey()), e.getValue()));
    }
    top.sort(Comparator.comparingLong(QuotaSpend::used).reversed()
        .thenComparing(QuotaSpend::key));
    return List.copyOf(top.subList(0, Math.min(limit, top.size())));
  }

  /**
   * {@inheritDoc}
   *
   * <p>It deletes every key under the store's prefix that holds a key's state, a reservation
   * sequence or a plan (<code>&lt;prefix&gt;:{*</code>), on every master of a Cluster; the set of live
   * instances stays.
   */
  @Override
  public void resetAll() {
    List<String> found = scan(layout.everyKeyPattern());
    RedisClusterCommands<String, String> redis = link.commands();
    for (int from = 0; from < found.size(); from += SCAN_COUNT) {
      redis.del(found.subList(from, Math.min(found.size(), from + SCAN_COUNT)).toArray(String[]::new));
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>On Redis the number is an estimate: the keys that made a call under the budget in the
   * current period or the one before ({@link Monitoring#periodMs}: at least as long as a key's
   * state outlives its last call, so every key with state is counted, and a key whose state has
   * expired since may be too), counted by a HyperLogLog per period and bucket (one {@code PFCOUNT}
   * per bucket; a standard error of 0.81%, exact in practice for a few keys), summed over the
   * buckets (a lower-level key charged under root keys of different Cluster slots counts once per
   * slot). For a budget whose state never expires (a bucket that never refills) it counts every
   * key called since the last {@link #resetAll}; {@link #reset} does not lower it. The cost is
   * independent of the number of keys: one command per bucket (one bucket on a standalone server,
   * 16,384 on a Cluster).
   */
  @Override
  public long trackedKeys(Budget budget) {
    long periodMs = store.scripted(budget).monitorPeriodMs;
    long period = Monitoring.period(periodMs, store.monitorMillis());
    String name = budget.name();
    long sum = 0;
    for (long count : perBucket((redis, b) -> List.of(periodMs == 0
        ? redis.pfcount(monitoring.seen(b, name, periodMs, period))
        : redis.pfcount(monitoring.seen(b, name, periodMs, period),
            monitoring.seen(b, name, periodMs, period - 1))))) {
      sum += count;
    }
    return sum;
  }

  /** Every key matching the pattern, on every master of a Cluster; may hold duplicates. */
  private List<String> scan(String pattern) {
    RedisClusterCommands<String, String> redis = link.commands();
    ScanArgs args = ScanArgs.Builder.matches(pattern).limit(SCAN_COUNT);
    KeyScanCursor<String> cursor = redis.scan(args);
    List<String> keys = new ArrayList<>(cursor.getKeys());
    while (!cursor.isFinished()) {
      cursor = redis.scan(cursor, args);
      keys.addAll(cursor.getKeys());
    }
    return keys;
  }

  /** A script's number; {@code inf} (no limit at a level) saturates as a Java cast does. */
  private static long asLong(Object o) {
    if (o instanceof Long l) {
      return l;
    }
    String s = o.toString();
    return s.endsWith("inf") ? (s.startsWith("-") ? Long.MIN_VALUE : Long.MAX_VALUE)
        : (long) Double.parseDouble(s);
  }

  private static double asDouble(Object o) {
    return o instanceof Long l ? l : Double.parseDouble(o.toString());
  }
}
