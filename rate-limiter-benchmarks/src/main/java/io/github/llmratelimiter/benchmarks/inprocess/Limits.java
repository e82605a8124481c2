package io.github.llmratelimiter.benchmarks.inprocess;

import java.time.Duration;

/**
 * The limits every benchmark uses, chosen so that an allowed case can never be denied during a
 * run and a denied case is denied on every call after its setup.
 *
 * <p>Allowed cases read the real clock: a window of {@value #ALLOW_WINDOW_MS} ms admitting {@value
 * #ALLOW_WINDOW_LIMIT} calls (a deny would need 10 billion calls per second), and buckets that hold
 * far more tokens than a run can spend. The window is short so that the log of one hot key stays
 * small (it holds the calls of the last {@value #ALLOW_WINDOW_MS} ms). The buckets refill slowly
 * ({@value #ALLOW_REFILL_PER_SECOND} token per second), so a key that was called stays below a
 * full bucket for the whole run: the store never takes a key that a benchmark walks, however
 * slowly, for an idle one and drops it, and every measured call is past the key's first. Denied
 * cases admit one call per hour, spent in the setup.
 */
final class Limits {

  /** Keys of the many-keys cases. */
  static final int KEY_COUNT = 10_000;

  static final long ALLOW_WINDOW_MS = 10;
  static final Duration ALLOW_WINDOW = Duration.ofMillis(ALLOW_WINDOW_MS);
  static final int ALLOW_WINDOW_LIMIT = 100_000_000;

  /** Bucket tokens of the allowed cases: more than a run can spend. */
  static final long ALLOW_TOKENS = 10_000_000_000L;

  /** The allowed cases' refill, in tokens per second: slow enough that a bucket never fills up. */
  static final double ALLOW_REFILL_PER_SECOND = 1;

  /** The window of the denied cases: one call per hour, spent in the setup. */
  static final Duration DENY_WINDOW = Duration.ofHours(1);

  /** A bucket that holds one token and regains it in {@value} seconds. */
  static final double DENY_REFILL_SECONDS = 3_600;

  private Limits() {}

  /** Returns {@code n} distinct keys, {@code prefix-0} to {@code prefix-(n-1)}. */
  static String[] keys(String prefix, int n) {
    String[] keys = new String[n];
    for (int i = 0; i < n; i++) {
      keys[i] = prefix + "-" + i;
    }
    return keys;
  }
}
