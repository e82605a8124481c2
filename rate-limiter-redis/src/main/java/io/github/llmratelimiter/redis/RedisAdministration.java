package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.core.internal.Args;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.util.ArrayList;
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
 */
final class RedisAdministration implements StoreAdministration {

  static final LuaScript INSPECT = LuaScript.load("inspect.lua");
  private static final int SCAN_COUNT = 1000;

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


  @Override
  public boolean reset(Budget budget, String key) {
    Args.notBlank("key", key);
    store.budget(budget);
    Set<String> found = keysOf(budget, key).keySet();
    return !found.isEmpty() && link.commands().del(found.toArray(String[]::new)) > 0;
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
