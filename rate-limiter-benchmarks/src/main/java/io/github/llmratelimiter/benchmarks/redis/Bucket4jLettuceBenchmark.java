package io.github.llmratelimiter.benchmarks.redis;

import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.ConsumptionProbe;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Peer on Redis: a Bucket4j bucket with two bandwidths (a per-minute budget and a per-second
 * burst, as in the in-process peer) behind Bucket4j's Lettuce proxy manager, which updates Redis
 * by compare-and-swap; every thread on one connection, on its own {@code redis-server}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class Bucket4jLettuceBenchmark {

  private static final long TOKENS = 10_000_000_000L;
  /** Bucket4j's highest refill: one token per nanosecond. */
  private static final long MAX_REFILL = 1_000_000_000L;

  private RedisClientOnServer redis;
  private BucketProxy bucket;

  /** Starts Redis, connects and builds the bucket's proxy. */
  @Setup(Level.Trial)
  public void setUp() {
    redis = new RedisClientOnServer();
    StatefulRedisConnection<String, byte[]> connection = redis.client.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE));
    BucketConfiguration configuration = BucketConfiguration.builder()
        .addLimit(Bandwidth.builder().capacity(TOKENS).refillGreedy(TOKENS, Duration.ofMinutes(1))
            .build())
        .addLimit(Bandwidth.builder().capacity(TOKENS)
            .refillGreedy(MAX_REFILL, Duration.ofSeconds(1)).build())
        .build();
    bucket = Bucket4jLettuce.casBasedBuilder(connection).build()
        .builder().build("tenant-0", () -> configuration);
    allowed(bucket.tryConsumeAndReturnRemaining(1));
  }

  /** Disconnects and stops Redis. */
  @TearDown(Level.Trial)
  public void tearDown() {
    redis.close();
  }

  /** Every thread consumes from the same bucket. */
  @Benchmark
  public long allowedOneKey() {
    return allowed(bucket.tryConsumeAndReturnRemaining(1));
  }

  private static long allowed(ConsumptionProbe probe) {
    if (!probe.isConsumed()) {
      throw new IllegalStateException("an allowed case was denied: " + probe);
    }
    return probe.getRemainingTokens();
  }
}
