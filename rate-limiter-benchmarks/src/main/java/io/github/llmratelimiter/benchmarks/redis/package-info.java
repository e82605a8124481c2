/**
 * JMH benchmarks on Redis, each starting its own {@code redis-server} (embedded-redis's binary)
 * on loopback: the raw {@code EVALSHA} floor, the limiter on {@code RedisRateLimitStore} and the
 * Bucket4j-Lettuce peer, plus {@link io.github.llmratelimiter.benchmarks.redis.PipelinedRun}, a
 * load run outside JMH that reports decisions per second and Redis CPU, and {@link
 * io.github.llmratelimiter.benchmarks.redis.MonitoringCost}, the time and commands of the store's
 * monitoring reads at many tracked keys. The store's benchmarks check exactly one round trip per
 * decision.
 */
@NullMarked
package io.github.llmratelimiter.benchmarks.redis;

import org.jspecify.annotations.NullMarked;
