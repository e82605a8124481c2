package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.ConsumptionProbe;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Peer: a Bucket4j local bucket with two bandwidths (a per-minute budget and a per-second burst,
 * the closest Bucket4j shape to a window plus a bucket), {@code tryConsumeAndReturnRemaining(1)}.
 *
 * <p>The one-key cases call one bucket directly (no key lookup, as Bucket4j's own figures do); the
 * own-key case gives each thread a bucket; the many-keys cases look the bucket up in a
 * {@code ConcurrentHashMap}, as a per-tenant limiter must.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class Bucket4jBenchmark {

  /** Bucket4j's highest refill: one token per nanosecond. */
  private static final long MAX_REFILL = 1_000_000_000L;

  private PeerLimiters<Bucket> buckets;

  /** Builds the buckets and spends the denied cases' tokens. */
  @Setup
  public void setUp() {
    buckets = new PeerLimiters<>(name -> allowing(), name -> denying());
  }

  static Bucket allowing() {
    long tokens = Limits.ALLOW_TOKENS;
    Bandwidth perMinute =
        Bandwidth.builder().capacity(tokens).refillGreedy(tokens, Duration.ofMinutes(1)).build();
    Bandwidth burst =
        Bandwidth.builder().capacity(tokens).refillGreedy(MAX_REFILL, Duration.ofSeconds(1)).build();
    return Bucket.builder().addLimit(perMinute).addLimit(burst).build();
  }

  static Bucket denying() {
    Duration refill = Duration.ofSeconds((long) Limits.DENY_REFILL_SECONDS);
    Bucket bucket = Bucket.builder()
        .addLimit(Bandwidth.builder().capacity(1).refillGreedy(1, Limits.DENY_WINDOW).build())
        .addLimit(Bandwidth.builder().capacity(1).refillGreedy(1, refill).build())
        .build();
    Check.allowed(bucket.tryConsume(1));
    return bucket;
  }

  /** A thread's own bucket. */
  public static class Own extends ThreadKeys {

    Bucket bucket;

    /** Builds the thread's bucket. */
    @Setup
    public void build() {
      bucket = allowing();
    }
  }

  /** Every thread consumes from the same bucket. */
  @Benchmark
  public long allowedOneKey() {
    return allowed(buckets.allowing.tryConsumeAndReturnRemaining(1));
  }

  /** Each thread consumes from a bucket of its own. */
  @Benchmark
  public long allowedOwnKey(Own t) {
    return allowed(t.bucket.tryConsumeAndReturnRemaining(1));
  }

  /** Each thread walks 10,000 keys' buckets. */
  @Benchmark
  public long allowedTenThousandKeys(ThreadKeys t) {
    return allowed(buckets.allowing(t.next()).tryConsumeAndReturnRemaining(1));
  }

  /** The bucket is empty. */
  @Benchmark
  public long deniedOneKey() {
    return denied(buckets.denying.tryConsumeAndReturnRemaining(1));
  }

  /** Each thread walks 10,000 keys' empty buckets. */
  @Benchmark
  public long deniedTenThousandKeys(ThreadKeys t) {
    return denied(buckets.denying(t.next()).tryConsumeAndReturnRemaining(1));
  }

  private static long allowed(ConsumptionProbe probe) {
    Check.allowed(probe.isConsumed());
    return probe.getRemainingTokens();
  }

  private static long denied(ConsumptionProbe probe) {
    Check.denied(probe.isConsumed());
    return probe.getNanosToWaitForRefill();
  }
}
