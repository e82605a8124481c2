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
import io.lettuce.core.ScanArgs;
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
import org.jspecify.annotations.Nullable;

/**
 * The administration of a {@link LuaRateLimitStore}, straight on Redis: it finds keys with {@code
 * SCAN} (on every master of a Cluster) and reads a key's state with {@code inspect.lua}. A lower
 * level of a hierarchy keeps its state per root key (the hash tag): every root key is looked under,
 * and a key's most used state is the one reported. A Redis failure surfaces as Lettuce's {@code
 * RedisException}, which {@link GuardedAdministration} turns into the fallback's answer.
 *
 * <p>Quota counters are read for the period that holds the store's wall clock now: a key used as
 * a root (the first level of its calls) by direct reads, one {@code HMGET} per quota; a key used
 * only at a lower level, whose counters lie under the roots it was charged under, by a {@code
 * SCAN} for them (as {@link #inspect} does), its most used counter per quota being reported.
 */
final class RedisAdministration implements StoreAdministration {

  static final LuaScript INSPECT = LuaScript.load("inspect.lua");
  private static final int SCAN_COUNT = 1000;
  /** The most quota counters {@link #topSpenders} reads per call. */
  static final int MAX_SPENDERS_EXAMINED = 10_000;

  private final LuaRateLimitStore store;
  private final RedisLink link;
  private final RedisKeys layout;

  RedisAdministration(LuaRateLimitStore store, RedisLink link, RedisKeys layout) {
    this.store = store;
    this.link = link;
    this.layout = layout;
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
   * <p>When the store hashes keys (the default), the snapshots name each key by its hashed form
   * ({@link RedisRateLimitStore#hashedKey(String)}): the key in clear is not in Redis.
   */
  @Override
  public List<KeySnapshot> top(Budget budget, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
    }
    store.budget(budget);
    List<KeySnapshot> all = new ArrayList<>();
    for (Map.Entry<String, Set<String>> e : rootsByKey(budget).entrySet()) {
      busiest(budget, layout.shown(e.getKey()), e.getKey(), e.getValue()).ifPresent(all::add);
    }
    all.sort(KeySnapshot.BUSIEST_FIRST);
    return List.copyOf(all.subList(0, Math.min(limit, all.size())));
  }


  /**
   * {@inheritDoc}
   *
   * <p>It deletes the key's state and its quota counters (every quota, every period) under every
   * root key, found with {@code SCAN}.
   */
  @Override
  public boolean reset(Budget budget, String key) {
    Args.notBlank("key", key);
    store.budget(budget);
    Set<String> found = new LinkedHashSet<>(keysOf(budget, key).keySet());
    found.addAll(scan(layout.quotaPattern(budget.name(), key)));
    return !found.isEmpty() && link.commands().del(found.toArray(String[]::new)) > 0;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Reads the counters of the key as a root with one {@code HMGET} per quota; when it has none
   * there (a key used only at a lower level), finds them under every root with one {@code SCAN}
   * over the keyspace (on every master of a Cluster) and reports the most used per quota.
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
    String state = layout.level(part, budget.name(), part)[0];
    RedisClusterCommands<String, String> redis = link.commands();
    long[] used = new long[quotas.size()];
    long[] pending = new long[quotas.size()];
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
   * <p>Finds the counters of the quota's current period with {@code SCAN MATCH} over the keyspace
   * (on every master of a Cluster): its cost grows with the number of keys in Redis, about one
   * {@code SCAN} call per 1,000 keys, whatever the number of spenders. It reads at most {@value
   * #MAX_SPENDERS_EXAMINED} counters (one {@code HGET} each), and stops scanning once it has: with
   * more keys that spent in the period, the answer is the top of those examined. A key charged
   * under several root keys counts its most used counter. When the store hashes keys (the
   * default), each key is named by its hashed form ({@link RedisRateLimitStore#hashedKey}).
   */
  @Override
  public List<QuotaSpend> topSpenders(Budget budget, QuotaLimit quota, int limit) {
    Args.notNull("quota", quota);
    Args.positive("limit", limit);
    store.budget(budget);
    long start = QuotaFrame.period(quota, store.wallClock().millis())[0];
    RedisClusterCommands<String, String> redis = link.commands();
    ScanArgs args = ScanArgs.Builder
        .matches(layout.quotaPattern(budget.name(), quota.stateId(), start)).limit(SCAN_COUNT);
    Map<String, Long> used = new HashMap<>();
    int examined = 0;
    KeyScanCursor<String> cursor = redis.scan(args);
    while (true) {
      for (String redisKey : cursor.getKeys()) {
        String[] parts = layout.parseQuota(redisKey);
        if (parts == null || examined >= MAX_SPENDERS_EXAMINED) {
          continue;
        }
        examined++;
        String u = redis.hget(redisKey, "u");
        if (u != null && Long.parseLong(u) > 0) {
          used.merge(parts[1], Long.parseLong(u), Math::max);
        }
      }
      if (cursor.isFinished() || examined >= MAX_SPENDERS_EXAMINED) {
        break;
      }
      cursor = redis.scan(cursor, args);
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

  @Override
  public long trackedKeys(Budget budget) {
    store.budget(budget);
    return rootsByKey(budget).size();
  }

  /** The key parts of {@code budget}, each with the parts of the roots it sits under. */
  private Map<String, Set<String>> rootsByKey(Budget budget) {
    Map<String, Set<String>> byKey = new LinkedHashMap<>();
    for (String redisKey : scan(layout.pattern(budget.name()))) {
      String[] parts = layout.parse(redisKey);
      if (parts != null) {
        byKey.computeIfAbsent(parts[1], k -> new LinkedHashSet<>()).add(parts[0]);
      }
    }
    return byKey;
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
