package io.github.llmratelimiter.benchmarks.inprocess;

import com.google.common.util.concurrent.RateLimiter;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Peer: Guava's {@code RateLimiter} (a smooth bursty bucket of permits per second), {@code
 * tryAcquire()}, which never waits.
 *
 * <p>One-key cases call one limiter directly; the own-key case gives each thread one; the
 * many-keys cases look the limiter up in a {@code ConcurrentHashMap}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class GuavaBenchmark {

  private PeerLimiters<RateLimiter> limiters;

  /** Builds the limiters and spends the denied cases' permits. */
  @Setup
  public void setUp() {
    limiters = new PeerLimiters<>(name -> allowing(), name -> denying());
  }

  static RateLimiter allowing() {
    return RateLimiter.create(Limits.ALLOW_TOKENS);
  }

  static RateLimiter denying() {
    RateLimiter limiter = RateLimiter.create(1 / Limits.DENY_REFILL_SECONDS);
    Check.allowed(limiter.tryAcquire());
    return limiter;
  }

  /** A thread's own limiter. */
  public static class Own extends ThreadKeys {

    RateLimiter limiter;

    /** Builds the thread's limiter. */
    @Setup
    public void build() {
      limiter = allowing();
    }
  }

  /** Every thread acquires from the same limiter. */
  @Benchmark
  public boolean allowedOneKey() {
    return Check.allowed(limiters.allowing.tryAcquire());
  }

  /** Each thread acquires from a limiter of its own. */
  @Benchmark
  public boolean allowedOwnKey(Own t) {
    return Check.allowed(t.limiter.tryAcquire());
  }

  /** Each thread walks 10,000 keys' limiters. */
  @Benchmark
  public boolean allowedTenThousandKeys(ThreadKeys t) {
    return Check.allowed(limiters.allowing(t.next()).tryAcquire());
  }

  /** The next permit is an hour away. */
  @Benchmark
  public boolean deniedOneKey() {
    return Check.denied(limiters.denying.tryAcquire());
  }

  /** Each thread walks 10,000 keys' spent limiters. */
  @Benchmark
  public boolean deniedTenThousandKeys(ThreadKeys t) {
    return Check.denied(limiters.denying(t.next()).tryAcquire());
  }
}
