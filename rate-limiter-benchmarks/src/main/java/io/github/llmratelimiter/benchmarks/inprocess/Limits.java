package io.github.llmratelimiter.benchmarks.inprocess;

import java.time.Duration;

/**
 * The limits every benchmark uses, chosen so that an allowed case can never be denied during a
 * run and a denied case is denied on every call after its setup.
 *
 * <p>Allowed cases read the real clock: a window of {@value #ALLOW_WINDOW_MS} ms admitting {@value
 * #ALLOW_WINDOW_LIMIT} calls (a deny would need 10 billion calls per second), and buckets that hold
 * and refill far more tokens than a run can spend. The window is short so that the log of one hot
 * key stays small (it holds the calls of the last {@value #ALLOW_WINDOW_MS} ms). Denied cases admit
 * one call per hour, spent in the setup.
 */
final class Limits {

  /** Keys of the many-keys cases. */
  static final int KEY_COUNT = 10_000;

  static final long ALLOW_WINDOW_MS = 10;
  static final Duration ALLOW_WINDOW = Duration.ofMillis(ALLOW_WINDOW_MS);
  static final int ALLOW_WINDOW_LIMIT = 100_000_000;

  /** Bucket tokens of the allowed cases: more than a run can spend, refilled as fast again. */
  static final long ALLOW_TOKENS = 10_000_000_000L;

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
