package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.benchmarks.load.ClosedLoopLoad;
import io.github.llmratelimiter.benchmarks.report.LoadFigure;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
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
 * What an upstream, and its shared fair order while no call waits, add to a pipelined decision on
 * Redis: {@value PipelinedRun#CONCURRENCY} threads over 1,000 keys on one connection, as in {@link
 * PipelinedRun}, the same {@code reserve} without an upstream, with an upstream (requests and
 * model tokens per window, one state for every key) on the call, and with the upstream and the
 * call's turn in its order ({@code reserve} with an {@link io.github.llmratelimiter.core.UpstreamTurn},
 * as the gateway sends every upstream call when the store keeps an order: the script checks that
 * no call waits and counts the tenant's service).
 *
 * <p>On a standalone server, each case on a fresh {@code redis-server}, two policies: a window and
 * a bucket, and the same with model tokens (a {@code reserve} of an estimate); every case checks
 * exactly one round trip per decision, with the upstream and the turn too (a standalone server
 * decides the caller's levels, the upstream and its order in one {@code EVALSHA}). On a Redis
 * Cluster of {@value #CLUSTER_MASTERS} masters, each case on a fresh Cluster, the window and
 * bucket without the upstream, with it, and with it and the turn: the script calls per decision
 * are counted (the client's, which must equal the masters'), not required to be 1, since a
 * decision whose upstream's slot differs from its root's takes two.
 *
 * <p>The cases with a turn open the store's order first (subscribed to its wake-ups, as a gateway
 * does), and check it after the run ({@link EmptyOrder#verify}): no call waits, no tenant has a
 * counter of its own while none waits, and the service counted is the decisions times the
 * estimate.
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
   * @return the figures: window and bucket without the upstream, with it and with it and the
   *     turn, model tokens likewise, then on the Cluster window and bucket likewise
   * @throws InterruptedException if interrupted
   * @throws IllegalStateException if a decision was a deny, Redis failed, a standalone decision
   *     took other than one round trip, the client's and the Cluster's script counts differ, or
   *     the order after a case with a turn is not as its calls left it
   */
  public static List<LoadFigure> run(Duration warmup, Duration measure, boolean cluster)
      throws InterruptedException {
    List<LoadFigure> figures = new ArrayList<>(List.of(
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_NONE, "window + bucket",
            (redis, key) -> redis.reserved(false, key, null)),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM, "window + bucket, upstream",
            (redis, key) -> redis.reserved(false, key, RedisLimiter.UPSTREAM)),
        inTurn(warmup, measure, LoadFigure.REDIS_UPSTREAM_TURN, "window + bucket", false),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_NONE_MODEL_TOKENS,
            "window + bucket + model tokens (reserve)",
            (redis, key) -> redis.reserved(true, key, null)),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_MODEL_TOKENS,
            "window + bucket + model tokens (reserve), upstream",
            (redis, key) -> redis.reserved(true, key, RedisLimiter.UPSTREAM)),
        inTurn(warmup, measure, LoadFigure.REDIS_UPSTREAM_MODEL_TOKENS_TURN,
            "window + bucket + model tokens (reserve)", true)));
    if (cluster) {
      figures.add(cluster(warmup, measure, LoadFigure.REDIS_CLUSTER_UPSTREAM_NONE, null, false));
      figures.add(cluster(warmup, measure, LoadFigure.REDIS_CLUSTER_UPSTREAM,
          RedisLimiter.UPSTREAM, false));
      figures.add(cluster(warmup, measure, LoadFigure.REDIS_CLUSTER_UPSTREAM_TURN,
          RedisLimiter.UPSTREAM, true));
    }
    return figures;
  }

  /** A standalone case of calls with the upstream and their turn in its order, none waiting. */
  private static LoadFigure inTurn(Duration warmup, Duration measure, String subject,
      String policy, boolean modelTokens) throws InterruptedException {
    return PipelinedRun.run(warmup, measure, subject, policy + ", upstream, empty order (turn)",
        (redis, key) -> redis.reservedInTurn(modelTokens, key), new PipelinedRun.Around() {
          @Override
          public void before(RedisLimiter redis) throws InterruptedException {
            redis.openOrder();
          }

          @Override
          public void after(RedisLimiter redis, long decisions) {
            redis.verifyOrder(decisions, modelTokens);
          }
        });
  }

  /**
   * A Cluster case of a window and a bucket: without an upstream ({@code upstream} null), with
   * one, or with one and the call's turn in its order ({@code turn}).
   */
  private static LoadFigure cluster(Duration warmup, Duration measure, String subject,
      @Nullable Upstream upstream, boolean turn) throws InterruptedException {
    System.out.println("# Redis Cluster of " + CLUSTER_MASTERS + " masters: " + subject);
    CommandCounter commands = new CommandCounter();
    ClientResources resources =
        DefaultClientResources.builder().commandLatencyRecorder(commands).build();
    try (RedisCluster cluster = RedisCluster.start(CLUSTER_MASTERS);
        RedisRateLimitStore store = RedisLimiter.measured(RedisRateLimitStore.cluster(
            cluster.seeds())).clientResources(resources).build()) {
      UpstreamOrder order = turn ? EmptyOrder.open(store, cluster.masters()) : null;
      LongAdder decisions = new LongAdder();
      double[] cpu = new double[2];
      CommandStats.Totals[] scripts = new CommandStats.Totals[2];
      CommandStats.Totals before = scripts(cluster);
      long clientBefore = ClusterScaleRun.clientScripts(commands);
      ClosedLoopLoad.Result r = ClosedLoopLoad.run(PipelinedRun.CONCURRENCY, warmup, measure,
          PipelinedRun.overKeys(decisions, key -> {
            if (turn) {
              RedisLimiter.reservedInTurn(store, false, key);
            } else {
              RedisLimiter.reserved(store, false, key, upstream);
            }
          }), () -> {
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
      if (order != null) {
        EmptyOrder.verify(order, cluster.masters(), decisions.sum(),
            RedisLimiter.turnEstimate(false));
      }
      double roundTrips = (double) server / decisions.sum();
      return PipelinedRun.figure(subject, (upstream == null ? "window + bucket"
              : turn ? "window + bucket, upstream, empty order (turn)"
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
