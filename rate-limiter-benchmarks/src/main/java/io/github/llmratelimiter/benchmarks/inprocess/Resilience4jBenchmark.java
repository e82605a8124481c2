package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.resilience4j.ratelimiter.RateLimiter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
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
 * Peer: a Resilience4j {@code AtomicRateLimiter} (permits per refresh period), {@code
 * acquirePermission()} with a zero timeout, so it never waits.
 *
 * <p>One-key cases call one limiter directly; the own-key case gives each thread one; the
 * many-keys cases look the limiter up in a {@code ConcurrentHashMap}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class Resilience4jBenchmark {

  private static final int ALLOW_PERMITS = 1_000_000_000;

  private PeerLimiters<RateLimiter> limiters;

  /** Builds the limiters and spends the denied cases' permits. */
  @Setup
  public void setUp() {
    limiters = new PeerLimiters<>(Resilience4jBenchmark::allowing, Resilience4jBenchmark::denying);
  }

  static RateLimiter allowing(String name) {
    return RateLimiter.of(name, RateLimiterConfig.custom()
        .limitForPeriod(ALLOW_PERMITS)
        .limitRefreshPeriod(Duration.ofSeconds(1))
        .timeoutDuration(Duration.ZERO)
        .build());
  }

  static RateLimiter denying(String name) {
    RateLimiter limiter = RateLimiter.of(name, RateLimiterConfig.custom()
        .limitForPeriod(1)
        .limitRefreshPeriod(Limits.DENY_WINDOW)
        .timeoutDuration(Duration.ZERO)
        .build());
    Check.allowed(limiter.acquirePermission());
    return limiter;
  }

  /** A thread's own limiter. */
  public static class Own extends ThreadKeys {

    RateLimiter limiter;

    /** Builds the thread's limiter. */
    @Setup
    public void build() {
      limiter = allowing("own");
    }
  }

  /** Every thread acquires from the same limiter. */
  @Benchmark
  public boolean allowedOneKey() {
    return Check.allowed(limiters.allowing.acquirePermission());
  }

  /** Each thread acquires from a limiter of its own. */
  @Benchmark
  public boolean allowedOwnKey(Own t) {
    return Check.allowed(t.limiter.acquirePermission());
  }

  /** Each thread walks 10,000 keys' limiters. */
  @Benchmark
  public boolean allowedTenThousandKeys(ThreadKeys t) {
    return Check.allowed(limiters.allowing(t.next()).acquirePermission());
  }

  /** The period's permit is spent. */
  @Benchmark
  public boolean deniedOneKey() {
    return Check.denied(limiters.denying.acquirePermission());
  }

  /** Each thread walks 10,000 keys' spent limiters. */
  @Benchmark
  public boolean deniedTenThousandKeys(ThreadKeys t) {
    return Check.denied(limiters.denying(t.next()).acquirePermission());
  }
}
