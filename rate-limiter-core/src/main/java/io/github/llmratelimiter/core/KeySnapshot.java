package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.Comparator;

/**
 * A point-in-time view of one key's state under one budget, for monitoring.
 *
 * @param budget the budget's name
 * @param key the key, in clear: callers that show it must mask it
 * @param windowUsed admissions counted in the current window (0 when the budget has no window)
 * @param windowLimit the window's limit (0 when the budget has no window)
 * @param tokens tokens in the bucket now (0 when the budget has no bucket)
 * @param capacity the bucket's capacity (0 when the budget has no bucket)
 * @param nextFreeMs milliseconds until a unit-cost call would be admitted, 0 if it would be now
 *     (for a bucket that does not refill and cannot pay, 0 as well: check {@code tokens}; for
 *     slots all in use, until the earliest lease expires)
 * @param modelTokensUsed model tokens counted in the current model-token window (0 without one)
 * @param modelTokenLimit the model-token window's limit (0 without one)
 * @param inFlight slots held now by calls in flight (0 without a concurrency limit)
 * @param concurrencyLimit the concurrency limit (0 without one)
 */
public record KeySnapshot(
    String budget,
    String key,
    long windowUsed,
    long windowLimit,
    double tokens,
    double capacity,
    long nextFreeMs,
    long modelTokensUsed,
    long modelTokenLimit,
    long inFlight,
    long concurrencyLimit) {

  /**
   * Validates the snapshot.
   *
   * @throws IllegalArgumentException if a name is blank or a count is negative
   */
  public KeySnapshot {
    Args.notBlank("budget", budget);
    Args.notBlank("key", key);
    Args.notNegative("windowUsed", windowUsed);
    Args.notNegative("windowLimit", windowLimit);
    Args.notNegative("nextFreeMs", nextFreeMs);
    Args.notNegative("modelTokensUsed", modelTokensUsed);
    Args.notNegative("modelTokenLimit", modelTokenLimit);
    Args.notNegative("inFlight", inFlight);
    Args.notNegative("concurrencyLimit", concurrencyLimit);
  }

  /**
   * Returns a snapshot of a budget without a concurrency limit.
   *
   * @param budget the budget's name
   * @param key the key
   * @param windowUsed admissions counted in the current window
   * @param windowLimit the window's limit
   * @param tokens tokens in the bucket now
   * @param capacity the bucket's capacity
   * @param nextFreeMs milliseconds until a unit-cost call would be admitted
   * @param modelTokensUsed model tokens counted in the current model-token window
   * @param modelTokenLimit the model-token window's limit
   */
  public KeySnapshot(String budget, String key, long windowUsed, long windowLimit, double tokens,
      double capacity, long nextFreeMs, long modelTokensUsed, long modelTokenLimit) {
    this(budget, key, windowUsed, windowLimit, tokens, capacity, nextFreeMs, modelTokensUsed,
        modelTokenLimit, 0, 0);
  }

  /**
   * Returns a snapshot of a budget without a model-token limit.
   *
   * @param budget the budget's name
   * @param key the key
   * @param windowUsed admissions counted in the current window
   * @param windowLimit the window's limit
   * @param tokens tokens in the bucket now
   * @param capacity the bucket's capacity
   * @param nextFreeMs milliseconds until a unit-cost call would be admitted
   */
  public KeySnapshot(
      String budget,
      String key,
      long windowUsed,
      long windowLimit,
      double tokens,
      double capacity,
      long nextFreeMs) {
    this(budget, key, windowUsed, windowLimit, tokens, capacity, nextFreeMs, 0, 0, 0, 0);
  }

  /** Orders snapshots the way stores rank {@link StoreAdministration#top}: busiest first, then by key. */
  public static final Comparator<KeySnapshot> BUSIEST_FIRST =
      Comparator.comparingDouble(KeySnapshot::utilization).reversed()
          .thenComparing(KeySnapshot::key);

  /**
   * Returns the share of the window used, from 0 to 1 (0 without a window).
   *
   * @return {@code windowUsed / windowLimit}
   */
  public double windowUtilization() {
    return windowLimit == 0 ? 0 : (double) windowUsed / windowLimit;
  }

  /**
   * Returns the largest share in use of any component: the window, the bucket, the model-token
   * window or the slots, from 0 to 1 (a model-token window reconciled above its limit, or more
   * slots held than a smaller limit admits, counts as 1).
   *
   * @return the busiest component's share in use
   */
  public double utilization() {
    return utilizationOf(windowUsed, windowLimit, tokens, capacity, modelTokensUsed,
        modelTokenLimit, inFlight, concurrencyLimit);
  }

  /** {@link #utilization()} of a state that is not (yet) a snapshot. */
  static double utilizationOf(long windowUsed, long windowLimit, double tokens, double capacity,
      long modelTokensUsed, long modelTokenLimit, long inFlight, long concurrencyLimit) {
    double windowUse = windowLimit == 0 ? 0 : Math.min(1, (double) windowUsed / windowLimit);
    double bucketUse = capacity == 0 ? 0 : 1 - tokens / capacity;
    double modelTokenUse =
        modelTokenLimit == 0 ? 0 : Math.min(1, (double) modelTokensUsed / modelTokenLimit);
    double slotUse = concurrencyLimit == 0 ? 0 : Math.min(1, (double) inFlight / concurrencyLimit);
    return Math.max(Math.max(windowUse, slotUse), Math.max(bucketUse, modelTokenUse));
  }
}
