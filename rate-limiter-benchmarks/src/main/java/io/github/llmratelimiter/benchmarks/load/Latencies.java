package io.github.llmratelimiter.benchmarks.load;

import java.util.Arrays;

/**
 * Every latency of a measured period, sorted, for exact percentiles.
 */
public final class Latencies {

  private final long[] sorted;

  private Latencies(long[] sorted) {
    this.sorted = sorted;
  }

  /**
   * Merges and sorts latencies.
   *
   * @param parts latencies in nanoseconds, in any order
   * @return the merged latencies
   */
  public static Latencies of(long[]... parts) {
    int n = 0;
    for (long[] p : parts) {
      n += p.length;
    }
    long[] all = new long[n];
    int i = 0;
    for (long[] p : parts) {
      System.arraycopy(p, 0, all, i, p.length);
      i += p.length;
    }
    Arrays.sort(all);
    return new Latencies(all);
  }

  /**
   * Merges measured periods' latencies.
   *
   * @param parts the periods' latencies
   * @return all of them, sorted
   */
  public static Latencies merge(java.util.List<Latencies> parts) {
    long[][] all = new long[parts.size()][];
    for (int i = 0; i < all.length; i++) {
      all[i] = parts.get(i).sorted;
    }
    return of(all);
  }

  /**
   * Returns how many latencies there are.
   *
   * @return the count
   */
  public long count() {
    return sorted.length;
  }

  /**
   * Returns a percentile by the nearest-rank method: the smallest latency that at least {@code
   * percent} % of all are at or below.
   *
   * @param percent the percentile, in (0, 100]
   * @return the latency in nanoseconds, or NaN if there are none
   */
  public double percentile(double percent) {
    if (!(percent > 0 && percent <= 100)) {
      throw new IllegalArgumentException("percent must be in (0, 100], but was " + percent);
    }
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int rank = (int) Math.ceil(percent / 100 * sorted.length);
    return sorted[Math.max(rank, 1) - 1];
  }
}
