package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.benchmarks.load.ClosedLoopLoad;
import io.github.llmratelimiter.benchmarks.report.LoadFigure;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * What an upstream adds to a pipelined decision on Redis: {@value PipelinedRun#CONCURRENCY}
 * threads over 1,000 keys on one connection, as in {@link PipelinedRun}, the same {@code reserve}
 * without and with an upstream (requests and model tokens per window, one state for every key) on
 * the call.
 *
 * <p>On a standalone server, each case on a fresh {@code redis-server}, two policies: a window and
 * a bucket, and the same with model tokens (a {@code reserve} of an estimate); every case checks
 * exactly one round trip per decision, with the upstream too (a standalone server decides the
 * caller's levels and the upstream in one {@code EVALSHA}). On a Redis Cluster of {@value
 * #CLUSTER_MASTERS} masters, each case on a fresh Cluster, the window and bucket without and with
 * the upstream: the script calls per decision are counted (the client's, which must equal the
 * masters'), not required to be 1, since a decision whose upstream's slot differs from its root's
 * takes two.
 */
public final class UpstreamPipelinedRun {

  /** The masters of the Cluster cases. */
  public static final int CLUSTER_MASTERS = 3;

  private UpstreamPipelinedRun() {}

  /**
   * Runs the standalone cases, each without the upstream, then with it, then the Cluster cases
   * likewise if asked.
   *
   * @param warmup each case's warm-up
   * @param measure each case's measured period
   * @param cluster whether to run the Cluster cases
   * @return the figures: window and bucket without and with the upstream, model tokens without
   *     and with it, then on the Cluster window and bucket without and with it
   * @throws InterruptedException if interrupted
   * @throws IllegalStateException if a decision was a deny, Redis failed, a standalone decision
   *     took other than one round trip, or the client's and the Cluster's script counts differ
   */
  public static List<LoadFigure> run(Duration warmup, Duration measure, boolean cluster)
      throws InterruptedException {
    List<LoadFigure> figures = new ArrayList<>(List.of(
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_NONE, "window + bucket",
            (redis, key) -> redis.reserved(false, key, null)),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM, "window + bucket, upstream",
            (redis, key) -> redis.reserved(false, key, RedisLimiter.UPSTREAM)),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_NONE_MODEL_TOKENS,
            "window + bucket + model tokens (reserve)",
            (redis, key) -> redis.reserved(true, key, null)),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_MODEL_TOKENS,
            "window + bucket + model tokens (reserve), upstream",
            (redis, key) -> redis.reserved(true, key, RedisLimiter.UPSTREAM))));
    if (cluster) {
      figures.add(cluster(warmup, measure, LoadFigure.REDIS_CLUSTER_UPSTREAM_NONE, null));
      figures.add(cluster(warmup, measure, LoadFigure.REDIS_CLUSTER_UPSTREAM,
          RedisLimiter.UPSTREAM));
    }
    return figures;
  }

  private static LoadFigure cluster(Duration warmup, Duration measure, String subject,
      @Nullable Upstream upstream) throws InterruptedException {
    System.out.println("# Redis Cluster of " + CLUSTER_MASTERS + " masters: " + subject);
    CommandCounter commands = new CommandCounter();
    ClientResources resources =
        DefaultClientResources.builder().commandLatencyRecorder(commands).build();
    try (RedisCluster cluster = RedisCluster.start(CLUSTER_MASTERS);
        RedisRateLimitStore store = RedisLimiter.measured(RedisRateLimitStore.cluster(
            cluster.seeds())).clientResources(resources).build()) {
      LongAdder decisions = new LongAdder();
      double[] cpu = new double[2];
      CommandStats.Totals[] scripts = new CommandStats.Totals[2];
      CommandStats.Totals before = scripts(cluster);
      long clientBefore = ClusterScaleRun.clientScripts(commands);
      ClosedLoopLoad.Result r = ClosedLoopLoad.run(PipelinedRun.CONCURRENCY, warmup, measure,
          PipelinedRun.overKeys(decisions, key -> RedisLimiter.reserved(store, false, key,
              upstream)), () -> {
                cpu[0] = ClusterScaleRun.cpuSeconds(cluster);
                scripts[0] = scripts(cluster);
              }, () -> {
                cpu[1] = ClusterScaleRun.cpuSeconds(cluster);
                scripts[1] = scripts(cluster);
              });
      if (store.errorCount() != 0) {
        throw new IllegalStateException(store.errorCount() + " Redis calls failed");
      }
      long server = scripts(cluster).calls() - before.calls();
      long client = ClusterScaleRun.clientScripts(commands) - clientBefore;
      if (client != server) {
        throw new IllegalStateException(String.format(Locale.ROOT, "%d decisions: the client "
            + "completed %d script calls (%s), the masters ran %d", decisions.sum(), client,
            commands.snapshot(), server));
      }
      double roundTrips = (double) server / decisions.sum();
      return PipelinedRun.figure(subject, (upstream == null ? "window + bucket"
              : "window + bucket, upstream") + ", 1,000 keys, Redis Cluster of " + CLUSTER_MASTERS
              + " masters", r, cpu, roundTrips,
          (double) (scripts[1].usec() - scripts[0].usec())
              / (scripts[1].calls() - scripts[0].calls()) * roundTrips);
    } finally {
      resources.shutdown();
    }
  }

  /** The script calls every master ran so far, and its time in them. */
  private static CommandStats.Totals scripts(RedisCluster cluster) {
    long calls = 0;
    long usec = 0;
    for (RedisInfo m : cluster.masters()) {
      CommandStats.Totals t = CommandStats.totals(m);
      calls += t.calls();
      usec += t.usec();
    }
    return new CommandStats.Totals(calls, usec);
  }
}
