package io.github.llmratelimiter.benchmarks.report;

import java.util.List;

/**
 * The benchmarks that {@code bench/run} runs: JMH runs (include patterns, one run per thread
 * count), in-process then on Redis (each Redis benchmark starts its own {@code redis-server} in
 * its {@code @Setup}), then the load runs outside JMH: the pipelined Redis runs (without and with
 * an upstream) and the HTTP run of the sample gateway.
 */
public final class Suite {

  private static final String IN_PROCESS =
      "\\.inprocess\\.(GatewayLimiter|HierarchicalLimiter|Quota|SpringAiAdvisor|Bucket4j|Resilience4j|Guava|Naive)Benchmark\\.";

  /**
   * Without an upstream, with one, with one and the call's turn in its empty order, and through the
   * empty waiting room: one thread and two.
   */
  private static final String UPSTREAMS = "\\.inprocess\\.UpstreamBenchmark\\.";

  private static final String REDIS =
      "\\.redis\\.(Evalsha|RedisStore|Bucket4jLettuce)Benchmark\\.";

  /** Which part of the suite a run belongs to, for {@code --skip-…}. */
  public enum Part {
    /** The in-process JMH benchmarks. */
    IN_PROCESS,
    /** The Redis JMH benchmarks and the pipelined Redis runs. */
    REDIS,
    /** The HTTP runs of the sample gateway and of the reactive gateway. */
    HTTP,
    /** The heap retained per tracked key. */
    MEMORY,
    /** The rounds of 1 and 2 threads, each on its own key. */
    SCALING,
    /** The scale-out run on Redis Clusters of 1, 3 and 6 masters, and the upstream's Cluster cases. */
    CLUSTER
  }

  /** One JMH run: the benchmarks it includes and the threads it uses. */
  public record Run(String title, int threads, String include, Part part) {}

  /** The pipelined Redis run, by the name {@code --only} matches. */
  public static final String PIPELINED = "io.github.llmratelimiter.benchmarks.redis.PipelinedRun";

  /**
   * The pipelined Redis runs without an upstream, with one, and with one and the call's turn in its
   * empty order, by the name {@code --only} matches.
   */
  public static final String UPSTREAMS_PIPELINED =
      "io.github.llmratelimiter.benchmarks.redis.UpstreamPipelinedRun";

  /** The slot renewal runs on Redis, by the name {@code --only} matches. */
  public static final String RENEWALS =
      "io.github.llmratelimiter.benchmarks.redis.SlotRenewalRun";

  /** The Redis Cluster scale-out run, by the name {@code --only} matches. */
  public static final String CLUSTER = "io.github.llmratelimiter.benchmarks.redis.ClusterScaleRun";

  /** The HTTP run, by the name {@code --only} matches. */
  public static final String HTTP = "io.github.llmratelimiter.benchmarks.http.HttpRun";

  /** The memory run, by the name {@code --only} matches. */
  public static final String MEMORY = "io.github.llmratelimiter.benchmarks.memory.FootprintRun";

  /** The scaling rounds, by the name {@code --only} matches. */
  public static final String SCALING =
      "io.github.llmratelimiter.benchmarks.inprocess.GatewayLimiterBenchmark.allowedOwnKey scaling";

  /** The scaling rounds' benchmark: each thread on a key of its own, sequential composition. */
  static final String SCALING_INCLUDE = "\\.inprocess\\.GatewayLimiterBenchmark\\.allowedOwnKey$";

  /** The rounds of the scaling check, alternating which thread count runs first. */
  public static final int SCALING_ROUNDS = 4;

  /** The runs of the suite, in order. */
  public static final List<Run> RUNS = List.of(
      new Run("in-process, 1 thread", 1,
          IN_PROCESS + "(allowedOneKey|allowedOneKeyDecisionEscapes|allowedTwoLevelsOneKey|allowedTenThousandKeys|denied\\w+|tryAcquire\\w+|reserveAndSettle\\w+|decideAndSettle|adviseCall)$",
          Part.IN_PROCESS),
      new Run("floor, 1 thread", 1, "\\.inprocess\\.FloorBenchmark\\.", Part.IN_PROCESS),
      new Run("in-process, 2 threads", 2,
          IN_PROCESS + "(allowedOneKey|allowedOwnKey|allowedTenThousandKeys)$", Part.IN_PROCESS),
      new Run("upstreams, 1 thread", 1, UPSTREAMS, Part.IN_PROCESS),
      new Run("upstreams, 2 threads", 2, UPSTREAMS, Part.IN_PROCESS),
      new Run("Redis, 1 thread", 1, REDIS + "(evalshaReturnOne|allowedOneKey)$", Part.REDIS),
      new Run("Redis, 8 threads", 8,
          REDIS + "(evalshaReturnOne|allowedOneKey|allowedThousandKeys)$", Part.REDIS));

  private Suite() {}

  /**
   * Returns whether a load run (by its name, {@link #PIPELINED} or {@link #HTTP}) is selected by
   * {@code only}.
   *
   * @param name the load run's name
   * @param only a pattern the name must contain a match of, or empty for every run
   * @return whether to run it
   */
  public static boolean selected(String name, String only) {
    return only.isEmpty() || java.util.regex.Pattern.compile(only).matcher(name).find();
  }

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
