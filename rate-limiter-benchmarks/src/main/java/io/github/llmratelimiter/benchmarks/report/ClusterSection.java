package io.github.llmratelimiter.benchmarks.report;

import io.github.llmratelimiter.benchmarks.redis.ClusterScaleRun;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** The report's section on the Redis Cluster scale-out run ({@link ClusterScaleRun}). */
final class ClusterSection {

  private ClusterSection() {}

  /**
   * Appends the section, or a line saying the run was left out.
   *
   * @param md the report so far
   * @param clusters the run's cases
   * @param machine the machine it ran on
   */
  static void render(StringBuilder md, List<ClusterFigure> clusters, Machine machine) {
    if (clusters.isEmpty()) {
      md.append("\nRedis Cluster scale-out: not in this run.\n");
      return;
    }
    ClusterFigure first = clusters.get(0);
    md.append("\n## Redis Cluster scale-out\n\n")
        .append("`ClusterScaleRun`: each case on a fresh local Redis Cluster of ")
        .append(inWords(ClusterScaleRun.MASTERS))
        .append(" masters (no replicas; `redis-server` processes of embedded-redis on loopback, ")
        .append("the 16,384 slots split evenly with `CLUSTER ADDSLOTS`), the store built as the ")
        .append("auto-configuration builds it for `spring.data.redis.cluster.nodes` ")
        .append("(`RedisRateLimitStore.cluster(seeds)`, keys hashed), failing closed, no ")
        .append("heartbeat. ").append(first.concurrency())
        .append(" threads call it synchronously, so that Lettuce pipelines their scripts on its ")
        .append("one connection per master; ")
        .append(String.format(Locale.ROOT, "%.0f s", first.seconds()))
        .append(" measured after a warm-up. Every decision is an allow and is checked to be ")
        .append("exactly one script call, counted by the client and summed over the masters' ")
        .append("`INFO commandstats`. Redis CPU is `used_cpu_sys + used_cpu_user` of every ")
        .append("master together over the measured period; client CPU is the client JVM's. ")
        .append("**Every process, the client's JVM and all the masters, shared the same ")
        .append(machine.cpus()).append(" cores.**\n\n")
        .append("| Case | Masters | Decisions/s | ÷ 1 master | p50 | p99 | Redis CPU (all masters, % of one core) | Redis CPU per decision | Client CPU (% of one core) | Load average at start |\n")
        .append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (ClusterFigure f : clusters) {
      md.append(String.format(Locale.ROOT,
          "| %s | %d | %,.0f | %s | %.2f ms | %.2f ms | %.0f %% | %.1f µs | %.0f %% | %s |%n",
          f.scenario(), f.masters(), f.decisionsPerSecond(), ratioToOne(f, clusters), f.p50Ms(),
          f.p99Ms(), f.redisCpuPercent(), f.redisCpuMicrosPerDecision(), f.clientCpuPercent(),
          f.loadAverage()));
    }
    md.append("\nHow the keys spread, read back from each master with `SCAN` after its case: ")
        .append("the limiter's hash tag is the root key of a decision (hashed), so a tenant's ")
        .append("keys, and all the levels of a hierarchy under one API key, carry the same tag ")
        .append("and lie in one slot (a script whose keys spanned two slots would fail, and the ")
        .append("run with it). Per master, in slot order: the distinct tags, the limiter keys, ")
        .append("and the share of the case's script calls; \"busiest ÷ mean\" is the busiest ")
        .append("master's tags over the mean.\n\n")
        .append("| Case | Masters | Hash tags | Tags per master | Busiest ÷ mean | Keys per master | Script calls per master | Tags on more than one master | Keys per tag |\n")
        .append("|---|---:|---:|---|---:|---|---|---:|---|\n");
    for (ClusterFigure f : clusters) {
      md.append(String.format(Locale.ROOT, "| %s | %d | %,d | %s | %.2f | %s | %s | %d | %s |%n",
          f.scenario(), f.masters(), f.hashTags(), joined(f.tagsPerMaster()),
          busiestOverMean(f.tagsPerMaster()), joined(f.keysPerMaster()),
          shares(f.scriptsPerMaster()), f.tagsOnSeveralMasters(),
          f.minKeysPerTag() == f.maxKeysPerTag() ? String.valueOf(f.minKeysPerTag())
              : f.minKeysPerTag() + "–" + f.maxKeysPerTag()));
    }
    md.append('\n').append(bounds(clusters, machine));
  }

  /** What a machine of this many cores can and cannot show, with the run's own CPU figures. */
  static String bounds(List<ClusterFigure> clusters, Machine machine) {
    double most = 0;
    double least = Double.MAX_VALUE;
    for (ClusterFigure f : clusters) {
      double busy = f.redisCpuPercent() + f.clientCpuPercent();
      most = Math.max(most, busy);
      least = Math.min(least, busy);
    }
    int cores = machine.cpus();
    int largest = ClusterScaleRun.MASTERS.get(ClusterScaleRun.MASTERS.size() - 1);
    StringBuilder text = new StringBuilder(String.format(Locale.ROOT,
        "What %d cores can and cannot show. The masters and the client together used %.0f to "
            + "%.0f %% of one core in these cases, out of the %d %% the machine has (the load "
            + "averages show what else ran). ", cores, least, most, cores * 100));
    if (cores < largest + 1) {
      text.append(String.format(Locale.ROOT, "With fewer cores than %d masters and a client, "
          + "adding masters adds no CPU: they split the same cores with the client, so the "
          + "ratio to 1 master is bounded by the machine, not by Redis, and says nothing of "
          + "the throughput of a Cluster whose masters have cores of their own, nor of round "
          + "trips between hosts. What it does show: that the store's decisions run on a "
          + "Cluster of each size in one script call each; what a decision costs the masters "
          + "in CPU as masters are added (the per-decision column: the same calls split over "
          + "more processes and connections, so shorter pipelines); and how evenly the hash "
          + "tags, and with them the script calls, spread over the masters, which is what "
          + "lets throughput grow with masters where each has cores of its own (there the "
          + "busiest master's share of the calls bounds it). ", largest));
    } else {
      text.append("Compare the ratio to 1 master with the cores the masters and the client "
          + "were left by the machine's other load. ");
    }
    text.append("To measure scale-out itself, run the same command on a machine with a core "
        + "per master and more for the client.\n");
    return text.toString();
  }

  /** {@code 1, 3 and 6}. */
  static String inWords(List<Integer> values) {
    List<String> parts = values.stream().map(String::valueOf).toList();
    return parts.size() == 1 ? parts.get(0)
        : String.join(", ", parts.subList(0, parts.size() - 1)) + " and "
            + parts.get(parts.size() - 1);
  }

  private static String ratioToOne(ClusterFigure f, List<ClusterFigure> clusters) {
    Optional<ClusterFigure> one = clusters.stream()
        .filter(o -> o.masters() == 1 && o.scenario().equals(f.scenario())).findFirst();
    return one.map(o -> String.format(Locale.ROOT, "%.2f",
        f.decisionsPerSecond() / o.decisionsPerSecond())).orElse("–");
  }

  private static String joined(List<? extends Number> values) {
    List<String> parts = new ArrayList<>();
    for (Number v : values) {
      parts.add(String.format(Locale.ROOT, "%,d", v.longValue()));
    }
    return String.join(" / ", parts);
  }

  static double busiestOverMean(List<Integer> values) {
    double mean = values.stream().mapToInt(Integer::intValue).average().orElse(0);
    int max = values.stream().mapToInt(Integer::intValue).max().orElse(0);
    return mean == 0 ? Double.NaN : max / mean;
  }

  private static String shares(List<Long> values) {
    long total = values.stream().mapToLong(Long::longValue).sum();
    List<String> parts = new ArrayList<>();
    for (long v : values) {
      parts.add(String.format(Locale.ROOT, "%.1f %%", total == 0 ? 0.0 : 100.0 * v / total));
    }
    return String.join(" / ", parts);
  }
}
