package io.github.llmratelimiter.benchmarks.report;

import java.util.List;

/**
 * The benchmarks that {@code bench/run} runs, as JMH include patterns, one run per thread count.
 *
 * <p>Redis benchmarks (issue 7) are not here yet: the Redis store does not exist. They go in a
 * package {@code io.github.llmratelimiter.benchmarks.redis} and get runs of their own here (one
 * thread, 8 threads on one key, 8 threads on 1,000 keys, pipelined), each starting its own
 * {@code redis-server} in its {@code @Setup}.
 */
public final class Suite {

  private static final String IN_PROCESS =
      "\\.inprocess\\.(GatewayLimiter|HierarchicalLimiter|Bucket4j|Resilience4j|Guava|Naive)Benchmark\\.";

  /** One JMH run: the benchmarks it includes and the threads it uses. */
  public record Run(String title, int threads, String include) {}

  /** The runs of the suite, in order. */
  public static final List<Run> RUNS = List.of(
      new Run("in-process, 1 thread", 1,
          IN_PROCESS + "(allowedOneKey|allowedOneKeyDecisionEscapes|allowedTenThousandKeys|denied\\w+|tryAcquire\\w+)$"),
      new Run("floor, 1 thread", 1, "\\.inprocess\\.FloorBenchmark\\."),
      new Run("in-process, 2 threads", 2,
          IN_PROCESS + "(allowedOneKey|allowedOwnKey|allowedTenThousandKeys)$"));

  private Suite() {}

  /**
   * Returns the include pattern of {@code run} narrowed to benchmarks that also match {@code
   * only}, if given.
   *
   * @param run the run
   * @param only a pattern the benchmark's full name must also contain a match of, or empty
   * @return the pattern to hand to JMH
   */
  public static String include(Run run, String only) {
    return only.isEmpty() ? run.include() : "^(?=.*(?:" + only + "))(?=.*(?:" + run.include() + "))";
  }
}
