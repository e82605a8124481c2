package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.core.internal.IdentityCache;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * A budget as one store's scripts see it: its nine level values (see {@code lib.lua}) packed once
 * into a script argument, and the Redis keys of the levels it was used at recently, so that a
 * decision on a known key computes no hash and builds no string. A budget's variants (other
 * limits, the same name and state) each pack their own values and share their defaults' keys.
 *
 * <p>The recent levels sit in a direct-mapped table of {@value #SLOTS} entries: a lookup is one
 * array read, a miss replaces the entry. Entries are immutable, so threads may race on a slot and
 * at worst compute a level's keys again.
 */
final class ScriptBudget {

  /** Entries of the table of recent levels (a power of two). */
  static final int SLOTS = 1024;
  /** The variants a budget keeps packed; a call with any further variant packs its own. */
  static final int MAX_VARIANTS = 1024;
  /** The views a budget finds by their budget's identity. */
  static final int RECENT_VIEWS = 16;

  /** The Redis keys of one level, from its limiter keys in clear. */
  private record LevelKeys(String root, String key, String[] keys, @Nullable String sequence) {}

  final Budget budget;
  /**
   * The number of Redis keys a level of this budget passes: its state, its model tokens' two, its
   * slots' (the same for every variant of a name: they limit the same components).
   */
  final int keyCount;
  /** The level's nine values (see {@link #values}). */
  final double[] values;
  /** The level's script argument: its nine values packed as a bulk string ({@link ScriptArgs}). */
  final byte[] levelArg;
  /**
   * An upstream's five keys ({@link RedisKeys#upstream}) when the budget is an upstream's, whose
   * state every caller shares, else null.
   */
  final String @Nullable [] upstreamKeys;
  /** The period of the budget's monitoring structures ({@link Monitoring#periodMs}). */
  final long monitorPeriodMs;
  private final boolean nanos;
  private final RedisKeys layout;
  private final LevelKeys[] recent;
  /** The variants of these (defaults') values packed so far; empty for a variant's. */
  private final ConcurrentHashMap<Budget, ScriptBudget> variants;
  /**
   * The views resolved last, by the budget's identity: a policy hands every call the same budget
   * instance, so a variant's call finds its values without hashing the budget.
   */
  private final IdentityCache<Budget, ScriptBudget> recentViews =
      new IdentityCache<>(RECENT_VIEWS);

  /**
   * The values of a budget's defaults.
   *
   * @param nanos whether the scripts count time in nanoseconds (a ticker), else microseconds
   */
  ScriptBudget(Budget defaults, RedisKeys layout, boolean nanos) {
    this(defaults, layout, nanos, new LevelKeys[SLOTS], new ConcurrentHashMap<>());
  }

  private ScriptBudget(Budget budget, RedisKeys layout, boolean nanos, LevelKeys[] recent,
      ConcurrentHashMap<Budget, ScriptBudget> variants) {
    this.budget = budget;
    this.layout = layout;
    this.nanos = nanos;
    this.recent = recent;
    this.variants = variants;
    this.values = values(budget, nanos);
    this.levelArg = ScriptArgs.bulkOfDoubles(values);
    this.upstreamKeys = Upstream.isUpstream(budget)
        ? layout.upstream(budget.name().substring(Upstream.BUDGET_PREFIX.length())) : null;
    this.monitorPeriodMs = Monitoring.periodMs(budget);
    this.keyCount =
        1 + (budget.modelTokens() == null ? 0 : 1) + (budget.concurrency() == null ? 0 : 1);
  }

  /**
   * The values of {@code b} as these (defaults') values' scripts see them: these when {@code b}
   * equals their budget, else {@code b}'s variant, sharing these keys.
   *
   * @throws IllegalArgumentException if {@code b}'s defaults differ from this budget
   */
  ScriptBudget view(Budget b) {
    if (b == budget) {
      return this;
    }
    ScriptBudget v = recentViews.find(b);
    if (v != null) {
      return v;
    }
    if (b.equals(budget)) {
      recentViews.put(b, this);
      return this;
    }
    v = variants.get(b.requireSameDefaults(budget));
    if (v == null) {
      v = new ScriptBudget(b, layout, nanos, recent, new ConcurrentHashMap<>(1));
      if (variants.size() >= MAX_VARIANTS) {
        return v; // not kept: a bounded set of variants (plans) is packed once
      }
      ScriptBudget raced = variants.putIfAbsent(b, v);
      v = raced != null ? raced : v;
    }
    recentViews.put(b, v);
    return v;
  }

  /**
   * The keys a level of this budget passes, from the three of {@link RedisKeys#level}: its state,
   * its model-token window's when it limits model tokens, its slots' when it limits concurrency.
   */
  String[] levelKeys(String[] all) {
    String[] keys = new String[keyCount];
    int k = 0;
    keys[k++] = all[0];
    if (budget.modelTokens() != null) {
      keys[k++] = all[1];
    }
    if (budget.concurrency() != null) {
      keys[k] = all[2];
    }
    return keys;
  }


  /**
   * Copies the {@link #keyCount} keys of the level of {@code key} under {@code root} (limiter keys
   * in clear) into {@code to} from {@code at}: its state key, its model-token keys when the budget
   * limits model tokens, its slots key when it limits concurrency; returns the root's reservation
   * counter when {@code key} is the root, else null. An upstream's level has its own keys ({@link
   * #upstreamKeys}), under whatever root.
   */
  @Nullable String copyKeys(String root, String key, String[] to, int at) {
    String[] upstream = upstreamKeys;
    if (upstream != null) { // the upstream's own keys, whatever the root
      System.arraycopy(levelKeys(upstream), 0, to, at, keyCount);
      return null;
    }
    int h = root.hashCode() * 31 + key.hashCode();
    int slot = (h ^ (h >>> 16)) & (SLOTS - 1);
    LevelKeys e = recent[slot];
    if (e == null || !e.key.equals(key) || !e.root.equals(root)) {
      String rootPart = layout.part(root);
      boolean isRoot = root.equals(key);
      e = new LevelKeys(root, key,
          levelKeys(layout.level(rootPart, budget.name(), isRoot ? rootPart : layout.part(key))),
          isRoot ? layout.sequence(rootPart) : null);
      recent[slot] = e;
    }
    System.arraycopy(e.keys, 0, to, at, keyCount);
    return e.sequence;
  }

  /**
   * The nine level values of {@code budget}, with durations in the scripts' time units: window
   * limit (0: none), window length, bucket capacity (0: none), refill per second, refill per time
   * unit, model-token limit (0: none), model-token window length, concurrency limit (0: none),
   * lease length.
   */
  static double[] values(Budget budget, boolean nanos) {
    double[] v = new double[9];
    WindowLimit w = budget.window();
    if (w != null) {
      v[0] = w.limit();
      v[1] = units(w.window(), nanos);
    }
    BucketLimit b = budget.bucket();
    if (b != null) {
      v[2] = b.capacity();
      v[3] = b.refillPerSecond();
      v[4] = b.refillPerSecond() / (nanos ? 1e9 : 1e6);
    }
    ModelTokenLimit m = budget.modelTokens();
    if (m != null) {
      v[5] = m.limit();
      v[6] = units(m.window(), nanos);
    }
    ConcurrencyLimit c = budget.concurrency();
    if (c != null) {
      v[7] = c.limit();
      v[8] = units(c.leaseTimeout(), nanos);
    }
    return v;
  }

  /** A duration in the scripts' time units (exact below 2^53 nanoseconds). */
  private static double units(Duration d, boolean nanos) {
    long n = d.toNanos();
    return nanos ? n : n / 1000.0;
  }
}
