package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.benchmarks.report.LoadFigure;
import java.time.Duration;
import java.util.List;

/**
 * What an upstream adds to a pipelined decision on a standalone Redis: {@value
 * PipelinedRun#CONCURRENCY} threads over 1,000 keys on one connection, as in {@link PipelinedRun},
 * each case on a fresh {@code redis-server}, the same {@code reserve} without and with an upstream
 * (requests and model tokens per window, one state for every key) on the call, on two policies: a
 * window and a bucket, and the same with model tokens (a {@code reserve} of an estimate). Every
 * case checks exactly one round trip per decision: with the upstream too, a standalone server
 * decides the caller's levels and the upstream in one {@code EVALSHA}.
 */
public final class UpstreamPipelinedRun {

  private UpstreamPipelinedRun() {}

  /**
   * Runs the four cases, each without the upstream, then with it.
   *
   * @param warmup each case's warm-up
   * @param measure each case's measured period
   * @return the figures: window and bucket without and with the upstream, then model tokens
   *     without and with it
   * @throws InterruptedException if interrupted
   * @throws IllegalStateException if a decision was a deny, Redis failed, or a decision took other
   *     than one round trip
   */
  public static List<LoadFigure> run(Duration warmup, Duration measure)
      throws InterruptedException {
    return List.of(
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_NONE, "window + bucket",
            (redis, key) -> redis.reservedWindowBucket(key, null)),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM, "window + bucket, upstream",
            (redis, key) -> redis.reservedWindowBucket(key, RedisLimiter.UPSTREAM)),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_NONE_MODEL_TOKENS,
            "window + bucket + model tokens (reserve)",
            (redis, key) -> redis.reservedModelTokens(key, null)),
        PipelinedRun.run(warmup, measure, LoadFigure.REDIS_UPSTREAM_MODEL_TOKENS,
            "window + bucket + model tokens (reserve), upstream",
            (redis, key) -> redis.reservedModelTokens(key, RedisLimiter.UPSTREAM)));
  }
}
