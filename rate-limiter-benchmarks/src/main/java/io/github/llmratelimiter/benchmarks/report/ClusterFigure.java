package io.github.llmratelimiter.benchmarks.report;

import java.util.List;

/**
 * One case of the Redis Cluster scale-out run on a Cluster of some masters: the throughput of the
 * decisions, the CPU of the masters and of the client, and how the keys' hash tags lay over the
 * masters (read back from the masters after the run).
 *
 * @param masters the Cluster's masters (no replicas)
 * @param scenario the case, in words
 * @param concurrency the threads calling the store
 * @param seconds the measured period
 * @param decisions the decisions started in the measured period
 * @param decisionsPerSecond their throughput
 * @param p50Ms the median latency, in milliseconds
 * @param p99Ms the 99th percentile latency, in milliseconds
 * @param redisCpuPercent the CPU of every master together over the measured period ({@code INFO
 *     cpu}), in % of one core
 * @param clientCpuPercent the CPU of the client's JVM over the measured period, in % of one core
 * @param loadAverage the machine's load averages (1, 5, 15 min) when the measured period started
 * @param scriptsPerMaster the script calls each master ran over the whole case (warm-up included),
 *     in slot order
 * @param tagsPerMaster the distinct limiter hash tags whose keys each master holds after the case
 * @param keysPerMaster the limiter keys each master holds after the case
 * @param hashTags the distinct limiter hash tags found over all masters
 * @param tagsOnSeveralMasters the hash tags whose keys were found on more than one master
 * @param minKeysPerTag the fewest keys found under one hash tag
 * @param maxKeysPerTag the most keys found under one hash tag
 */
public record ClusterFigure(
    int masters,
    String scenario,
    int concurrency,
    double seconds,
    long decisions,
    double decisionsPerSecond,
    double p50Ms,
    double p99Ms,
    double redisCpuPercent,
    double clientCpuPercent,
    String loadAverage,
    List<Long> scriptsPerMaster,
    List<Integer> tagsPerMaster,
    List<Long> keysPerMaster,
    int hashTags,
    int tagsOnSeveralMasters,
    int minKeysPerTag,
    int maxKeysPerTag) {

  /**
   * Validates the figure and copies its lists.
   *
   * @throws IllegalArgumentException if the masters, the concurrency or the period is not
   *     positive, or a per-master list does not have one entry per master
   */
  public ClusterFigure {
    if (masters < 1) {
      throw new IllegalArgumentException("masters must be >= 1, but was " + masters);
    }
    if (concurrency < 1) {
      throw new IllegalArgumentException("concurrency must be >= 1, but was " + concurrency);
    }
    if (!(seconds > 0)) {
      throw new IllegalArgumentException("seconds must be > 0, but was " + seconds);
    }
    scriptsPerMaster = perMaster("scriptsPerMaster", scriptsPerMaster, masters);
    tagsPerMaster = perMaster("tagsPerMaster", tagsPerMaster, masters);
    keysPerMaster = perMaster("keysPerMaster", keysPerMaster, masters);
  }

  private static <T> List<T> perMaster(String name, List<T> values, int masters) {
    if (values == null || values.size() != masters) {
      throw new IllegalArgumentException(name + " must have one entry per master (" + masters
          + "), but was " + values);
    }
    return List.copyOf(values);
  }

  /**
   * Returns the masters' CPU time per decision.
   *
   * @return microseconds of Redis CPU (all masters) per decision
   */
  public double redisCpuMicrosPerDecision() {
    return redisCpuPercent / 100 * seconds * 1e6 / decisions;
  }
}
