package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * A budget as one store's scripts see it: its seven level values (see {@code lib.lua}) packed once
 * into a script argument, and the Redis keys of the levels it was used at recently, so that a decision on a known key
 * computes no hash and builds no string.
 *
 * <p>The recent levels sit in a direct-mapped table of {@value #SLOTS} entries: a lookup is one
 * array read, a miss replaces the entry. Entries are immutable, so threads may race on a slot and
 * at worst compute a level's keys again.
 */
final class ScriptBudget {

  /** Entries of the table of recent levels (a power of two). */
  static final int SLOTS = 1024;

  /** The Redis keys of one level, from its limiter keys in clear. */
  private record LevelKeys(String root, String key, String[] keys, @Nullable String sequence) {}

  final Budget budget;
  /** The number of Redis keys a level of this budget passes: its state, and its model tokens'. */
  final int keyCount;
  /** The level's script argument: its seven values packed as a bulk string ({@link ScriptArgs}). */
  final byte[] levelArg;
  private final RedisKeys layout;
  private final LevelKeys[] recent = new LevelKeys[SLOTS];

  /**
   * @param nanos whether the scripts count time in nanoseconds (a ticker), else microseconds
   */
  ScriptBudget(Budget budget, RedisKeys layout, boolean nanos) {
    this.budget = budget;
    this.layout = layout;
    this.levelArg = ScriptArgs.bulkOfDoubles(values(budget, nanos));
    this.keyCount = budget.modelTokens() == null ? 1 : 3;
  }

  /**
   * Copies the {@link #keyCount} keys of the level of {@code key} under {@code root} (limiter keys
   * in clear) into {@code to} from {@code at}: its state key, and its model-token keys when the
   * budget limits model tokens; returns the root's reservation counter when {@code key} is the
   * root, else null.
   */
  @Nullable String copyKeys(String root, String key, String[] to, int at) {
    int h = root.hashCode() * 31 + key.hashCode();
    int slot = (h ^ (h >>> 16)) & (SLOTS - 1);
    LevelKeys e = recent[slot];
    if (e == null || !e.key.equals(key) || !e.root.equals(root)) {
      String rootPart = layout.part(root);
      boolean isRoot = root.equals(key);
      e = new LevelKeys(root, key,
          layout.level(rootPart, budget.name(), isRoot ? rootPart : layout.part(key)),
          isRoot ? layout.sequence(rootPart) : null);
      recent[slot] = e;
    }
    System.arraycopy(e.keys, 0, to, at, keyCount);
    return e.sequence;
  }

  /**
   * The seven level values of {@code budget}, with durations in the scripts' time units: window
   * limit (0: none), window length, bucket capacity (0: none), refill per second, refill per time
   * unit, model-token limit (0: none), model-token window length.
   */
  static double[] values(Budget budget, boolean nanos) {
    double[] v = new double[7];
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
    return v;
  }

  /** A duration in the scripts' time units (exact below 2^53 nanoseconds). */
  private static double units(Duration d, boolean nanos) {
    long n = d.toNanos();
    return nanos ? n : n / 1000.0;
  }
}
