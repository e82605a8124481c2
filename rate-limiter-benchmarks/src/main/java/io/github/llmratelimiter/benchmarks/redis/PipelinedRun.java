package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.benchmarks.load.ClosedLoopLoad;
import io.github.llmratelimiter.benchmarks.report.LoadFigure;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;

/**
 * Many decisions in flight on the store's one connection: {@value #CONCURRENCY} threads call the
 * limiter on Redis over 1,000 keys, so that Lettuce pipelines their {@code EVALSHA}s; reports
 * decisions per second, latency, and Redis's CPU ({@code INFO cpu}, system + user) over the
 * measured period, and checks exactly one round trip per decision over the whole run.
 */
public final class PipelinedRun {

  /** The threads calling the store. */
  public static final int CONCURRENCY = 32;

  private PipelinedRun() {}

  /**
   * Starts Redis, runs the load and stops Redis.
   *
   * @param warmup the warm-up
   * @param measure the measured period
   * @return the figure
   * @throws InterruptedException if interrupted
   * @throws IllegalStateException if a decision was a deny, Redis failed, or a decision took other
   *     than one round trip
   */
  public static LoadFigure run(Duration warmup, Duration measure) throws InterruptedException {
    try (RedisLimiter redis = new RedisLimiter()) {
      String[] keys = new String[RedisStoreBenchmark.KEY_COUNT];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = "tenant-" + i;
      }
      int[] next = new int[CONCURRENCY * 16]; // one slot per worker, 16 apart (no false sharing)
      LongAdder decisions = new LongAdder();
      double[] cpu = new double[2];
      redis.roundTrips.mark();
      ClosedLoopLoad.Result r = ClosedLoopLoad.run(CONCURRENCY, warmup, measure, worker -> {
        int slot = worker * 16;
        int i = next[slot];
        next[slot] = i + 1 == keys.length ? 0 : i + 1;
        decisions.increment();
        redis.allowed(keys[(i + worker * keys.length / CONCURRENCY) % keys.length]);
      }, () -> cpu[0] = redis.info.cpuSeconds(), () -> cpu[1] = redis.info.cpuSeconds());
      redis.checkNoErrors();
      double roundTrips = redis.roundTrips.verify(decisions.sum());
      return new LoadFigure(LoadFigure.REDIS_PIPELINED,
          "1,000 keys, " + CONCURRENCY + " threads on one connection", r.concurrency(), r.seconds(),
          r.calls(), r.callsPerSecond(), r.latencies().percentile(50) / 1e6,
          r.latencies().percentile(99) / 1e6, (cpu[1] - cpu[0]) / r.seconds() * 100, roundTrips);
    }
  }
}
