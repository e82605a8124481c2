package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The store's Redis side: each decision is one call of {@code acquire.lua} over every level's keys.
 * Bad input is rejected before Redis is asked; a Redis failure surfaces as Lettuce's {@code
 * RedisException}, which {@link GuardedRedisStore} turns into the failure policy.
 *
 * <p>Time is the Redis server's ({@code TIME}, microseconds) unless a {@link Ticker} is given: then
 * the ticker's nanoseconds are sent with each call, and keys live at least {@value
 * #TICKER_MIN_TTL_MS} ms of wall-clock time, since ticker time need not follow the wall clock.
 */
final class LuaRateLimitStore implements RateLimitStore {

  static final long TICKER_MIN_TTL_MS = 3_600_000L;

  private static final LuaScript ACQUIRE = LuaScript.load("acquire.lua");
  private static final LuaScript INSPECT = LuaScript.load("inspect.lua");
  private static final int SCAN_COUNT = 1000;

  private final RedisLink link;
  private final RedisKeys layout;
  private final @Nullable Ticker ticker;
  private final ConcurrentHashMap<String, Budget> budgets = new ConcurrentHashMap<>();

  LuaRateLimitStore(RedisLink link, RedisKeys layout, @Nullable Ticker ticker) {
    this.link = link;
    this.layout = layout;
    this.ticker = ticker;
  }

  /** A validated call: decided without Redis ({@code decided} set), or to run on Redis. */
  record Call(
      List<Budget> levels, List<String> keys, double cost, Composition composition,
      @Nullable Decision decided) {}

  /**
   * Validates a call exactly as the in-memory store does and answers it when Redis is not needed
   * (a cost no bucket can ever hold).
   *
   * @throws IllegalArgumentException on bad input
   */
  Call plan(List<Budget> levels, List<String> keys, double cost, Composition composition) {
    Checks.notNull("levels", levels);
    Checks.notNull("keys", keys);
    if (levels.isEmpty()) {
      throw new IllegalArgumentException("levels must not be empty, but was " + levels);
    }
    if (levels.size() != keys.size()) {
      throw new IllegalArgumentException(
          "keys must have one key per level (" + levels.size() + "), but had " + keys.size());
    }
    if (levels.size() == 1) {
      return plan(levels.get(0), keys.get(0), cost, composition);
    }
    Checks.positiveFinite("cost", cost);
    Checks.notNull("composition", composition);
    Set<String> names = new HashSet<>();
    for (int i = 0; i < levels.size(); i++) {
      Checks.notBlank("keys[" + i + "]", keys.get(i));
      Budget b = budget(levels.get(i));
      if (!names.add(b.name())) {
        throw new IllegalArgumentException(
            "levels must have distinct names, but '" + b.name() + "' appears twice");
      }
    }
    for (Budget b : levels) {
      if (!b.fits(cost)) {
        return decided(b);
      }
    }
    return new Call(List.copyOf(levels), List.copyOf(keys), cost, composition, null);
  }

  /** Validates a single-budget call; see {@link #plan(List, List, double, Composition)}. */
  Call plan(Budget budget, String key, double cost, Composition composition) {
    Checks.notBlank("key", key);
    Checks.positiveFinite("cost", cost);
    Checks.notNull("composition", composition);
    budget(budget);
    if (!budget.fits(cost)) {
      return decided(budget);
    }
    return new Call(List.of(budget), List.of(key), cost, composition, null);
  }

  private static Call decided(Budget b) {
    return new Call(List.of(b), List.of(), 0, Composition.SEQUENTIAL,
        Decision.finalDeny(Reason.COST_EXCEEDS_CAPACITY, 0, 0, b.name()));
  }

  /** Checks the budget and that its name always comes with the same limits in this store. */
  Budget budget(@Nullable Budget budget) {
    Checks.notNull("budget", budget);
    if (budget.modelTokens() != null) {
      throw new UnsupportedOperationException("the Redis store does not support model-token"
          + " budgets yet, but budget '" + budget.name() + "' has " + budget.modelTokens());
    }
    Budget known = budgets.putIfAbsent(budget.name(), budget);
    if (known != null && known != budget && !known.equals(budget)) {
      throw new IllegalArgumentException(
          "budget '" + budget.name() + "' is already used with other limits: " + known
              + ", but was " + budget);
    }
    return budget;
  }

  /** Runs a planned call on Redis: one script call, whatever the number of levels. */
  Decision execute(Call call) {
    if (call.decided() != null) {
      return call.decided();
    }
    List<Budget> levels = call.levels();
    int n = levels.size();
    String root = call.keys().get(0);
    String[] keys = new String[2 * n];
    List<String> args = new ArrayList<>(6 + 5 * n);
    timeArgs(args);
    args.add(Double.toString(call.cost()));
    args.add(call.composition() == Composition.SEQUENTIAL ? "S" : "R");
    args.add(Integer.toString(n));
    for (int i = 0; i < n; i++) {
      Budget b = levels.get(i);
      String key = call.keys().get(i);
      keys[2 * i] = layout.window(root, b.name(), key);
      keys[2 * i + 1] = layout.bucket(root, b.name(), key);
      levelArgs(args, b);
    }
    List<Object> r = ACQUIRE.run(link.commands(), keys, args.toArray(String[]::new));
    boolean allowed = asLong(r.get(0)) == 1;
    Reason reason = Reason.valueOf((String) r.get(1));
    String level = levels.get((int) asLong(r.get(2)) - 1).name();
    return new Decision(allowed, asLong(r.get(3)), asLong(r.get(4)), asLong(r.get(5)), reason,
        asLong(r.get(6)) == 1, level);
  }

  @Override
  public Decision acquire(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    return execute(plan(levels, keys, cost, composition));
  }

  @Override
  public Decision acquire(Budget budget, String key, double cost, Composition composition) {
    return execute(plan(budget, key, cost, composition));
  }

  @Override
  public Optional<KeySnapshot> inspect(Budget budget, String key) {
    Checks.notBlank("key", key);
    budget(budget);
    return busiest(budget, key, new LinkedHashSet<>(keysOf(budget, key).values()));
  }

  /** The Redis keys that hold {@code key}'s state under {@code budget}, each with its root key. */
  private Map<String, String> keysOf(Budget budget, String key) {
    Map<String, String> rootByRedisKey = new LinkedHashMap<>();
    for (String redisKey : scan(layout.pattern(budget.name(), key))) {
      String[] parts = layout.parse(redisKey);
      if (parts != null && parts[1].equals(key)) {
        rootByRedisKey.put(redisKey, parts[0]);
      }
    }
    return rootByRedisKey;
  }

  /** The most used state of {@code key} over the root keys it was charged under. */
  private Optional<KeySnapshot> busiest(Budget budget, String key, Set<String> roots) {
    KeySnapshot best = null;
    for (String root : roots) {
      KeySnapshot s = snapshot(budget, root, key);
      if (s != null && (best == null || use(s) > use(best))) {
        best = s;
      }
    }
    return Optional.ofNullable(best);
  }

  private @Nullable KeySnapshot snapshot(Budget budget, String root, String key) {
    List<String> args = new ArrayList<>(8);
    timeArgs(args);
    levelArgs(args, budget);
    String[] keys = {
      layout.window(root, budget.name(), key), layout.bucket(root, budget.name(), key)
    };
    List<Object> r = INSPECT.run(link.commands(), keys, args.toArray(String[]::new));
    if (r.isEmpty()) {
      return null;
    }
    WindowLimit w = budget.window();
    BucketLimit b = budget.bucket();
    return new KeySnapshot(budget.name(), key, asLong(r.get(0)), w == null ? 0 : w.limit(),
        asDouble(r.get(1)), b == null ? 0 : b.capacity(), asLong(r.get(2)));
  }

  @Override
  public List<KeySnapshot> top(Budget budget, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
    }
    budget(budget);
    List<KeySnapshot> all = new ArrayList<>();
    for (Map.Entry<String, Set<String>> e : rootsByKey(budget).entrySet()) {
      busiest(budget, e.getKey(), e.getValue()).ifPresent(all::add);
    }
    all.sort(Comparator.comparingDouble(LuaRateLimitStore::use).reversed()
        .thenComparing(KeySnapshot::key));
    return List.copyOf(all.subList(0, Math.min(limit, all.size())));
  }

  /** The larger share of either component in use, from 0 to 1 (as the in-memory store ranks). */
  private static double use(KeySnapshot s) {
    double bucketUse = s.capacity() == 0 ? 0 : 1 - s.tokens() / s.capacity();
    return Math.max(s.windowUtilization(), bucketUse);
  }

  @Override
  public boolean reset(Budget budget, String key) {
    Checks.notBlank("key", key);
    budget(budget);
    Set<String> found = keysOf(budget, key).keySet();
    return !found.isEmpty() && link.commands().del(found.toArray(String[]::new)) > 0;
  }

  @Override
  public long trackedKeys(Budget budget) {
    budget(budget);
    return rootsByKey(budget).size();
  }

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

  /** Connects, waiting up to {@code wait}, and loads the scripts; throws on failure. */
  void warmUp(Duration wait) {
    RedisClusterCommands<String, String> redis = link.commands(wait);
    redis.scriptLoad(ACQUIRE.source);
    redis.scriptLoad(INSPECT.source);
  }

  /** Sends the PING a health check needs; throws on failure. */
  void ping() {
    link.commands().ping();
  }

  private void timeArgs(List<String> args) {
    if (ticker == null) {
      args.add("");
      args.add("1000");
      args.add("0");
    } else {
      args.add(Long.toString(ticker.read()));
      args.add("1000000");
      args.add(Long.toString(TICKER_MIN_TTL_MS));
    }
  }

  private void levelArgs(List<String> args, Budget budget) {
    WindowLimit w = budget.window();
    BucketLimit b = budget.bucket();
    if (w == null) {
      args.add("0");
      args.add("0");
    } else {
      long nanos = w.window().toNanos();
      args.add(Long.toString(w.limit()));
      args.add(ticker == null ? Double.toString(nanos / 1000.0) : Long.toString(nanos));
    }
    if (b == null) {
      args.add("0");
      args.add("0");
      args.add("0");
    } else {
      args.add(Double.toString(b.capacity()));
      args.add(Double.toString(b.refillPerSecond()));
      args.add(Double.toString(b.refillPerSecond() / (ticker == null ? 1e6 : 1e9)));
    }
  }

  private static long asLong(Object o) {
    return o instanceof Long l ? l : (long) Double.parseDouble(o.toString());
  }

  private static double asDouble(Object o) {
    return o instanceof Long l ? l : Double.parseDouble(o.toString());
  }

  @Override
  public void close() {
    link.close();
  }
}
