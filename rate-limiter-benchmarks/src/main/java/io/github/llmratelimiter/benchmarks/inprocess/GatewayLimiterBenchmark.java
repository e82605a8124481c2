package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.GatewayLimiter;
import io.github.llmratelimiter.core.Reason;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * {@link GatewayLimiter}: the sliding-window log and the token bucket of one key under one lock,
 * in both composition modes, on the system ticker.
 *
 * <p>The allowed cases return {@link Decision#remaining()} (a caller reads the decision's fields);
 * {@link #allowedOneKeyDecisionEscapes} hands the whole decision to JMH instead, so that it
 * always escapes. The {@code tryAcquire…} cases call {@link GatewayLimiter#tryAcquire}, which
 * charges the same way and returns only the verdict, with no decision to allocate.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class GatewayLimiterBenchmark {

  /** The composition mode under test. */
  @Param({"SEQUENTIAL", "RESERVE_COMMIT"})
  public Composition composition;

  private GatewayLimiter allowing;
  private GatewayLimiter rpmDenying;
  private GatewayLimiter burstDenying;
  private String[] keys;

  /** Builds the limiters and spends the denied cases' budgets. */
  @Setup
  public void setUp() {
    keys = Limits.keys("tenant", Limits.KEY_COUNT);
    allowing = GatewayLimiter.builder()
        .requestsPerWindow(Limits.ALLOW_WINDOW_LIMIT, Limits.ALLOW_WINDOW)
        .burst(Limits.ALLOW_TOKENS, Limits.ALLOW_REFILL_PER_SECOND)
        .composition(composition)
        .build();
    rpmDenying = GatewayLimiter.builder()
        .requestsPerWindow(1, Limits.DENY_WINDOW)
        .burst(Limits.ALLOW_TOKENS, Limits.ALLOW_REFILL_PER_SECOND)
        .composition(composition)
        .build();
    burstDenying = GatewayLimiter.builder()
        .requestsPerWindow(Limits.ALLOW_WINDOW_LIMIT, Limits.ALLOW_WINDOW)
        .burst(1, 1 / Limits.DENY_REFILL_SECONDS)
        .composition(composition)
        .build();
    for (String key : keys) {
      Check.allowed(allowing.allow(key));
      Check.allowed(rpmDenying.allow(key));
      Check.allowed(burstDenying.allow(key));
    }
  }


  /** Every thread calls with the same key. */
  @Benchmark
  public long allowedOneKey() {
    return Check.allowed(allowing.allow(keys[0])).remaining();
  }

  /** Every thread calls with the same key and hands the decision on. */
  @Benchmark
  public Decision allowedOneKeyDecisionEscapes() {
    return Check.allowed(allowing.allow(keys[0]));
  }

  /** Each thread calls with a key of its own. */
  @Benchmark
  public long allowedOwnKey(ThreadKeys t) {
    return Check.allowed(allowing.allow(t.ownKey)).remaining();
  }

  /** Each thread walks 10,000 keys. */
  @Benchmark
  public long allowedTenThousandKeys(ThreadKeys t) {
    return Check.allowed(allowing.allow(keys[t.next()])).remaining();
  }

  /** The window is full: denied with RPM_LIMIT before the bucket runs. */
  @Benchmark
  public long deniedRpmOneKey() {
    return Check.denied(rpmDenying.allow(keys[0]), Reason.RPM_LIMIT).retryAfterMs();
  }

  /** The window has room and the bucket is empty: denied with BURST_LIMIT. */
  @Benchmark
  public long deniedBurstOneKey() {
    return Check.denied(burstDenying.allow(keys[0]), Reason.BURST_LIMIT).retryAfterMs();
  }

  /** Each thread walks 10,000 keys whose windows are full. */
  @Benchmark
  public long deniedTenThousandKeys(ThreadKeys t) {
    return Check.denied(rpmDenying.allow(keys[t.next()]), Reason.RPM_LIMIT).retryAfterMs();
  }

  /** {@link GatewayLimiter#tryAcquire}: the same charge, only the verdict; one key. */
  @Benchmark
  public boolean tryAcquireOneKey() {
    return Check.allowed(allowing.tryAcquire(keys[0], 1.0));
  }

  /** {@link GatewayLimiter#tryAcquire} over 10,000 keys. */
  @Benchmark
  public boolean tryAcquireTenThousandKeys(ThreadKeys t) {
    return Check.allowed(allowing.tryAcquire(keys[t.next()], 1.0));
  }

  /** {@link GatewayLimiter#tryAcquire} with a full window. */
  @Benchmark
  public boolean tryAcquireDeniedRpmOneKey() {
    return Check.denied(rpmDenying.tryAcquire(keys[0], 1.0));
  }

  /** {@link GatewayLimiter#tryAcquire} with an empty bucket. */
  @Benchmark
  public boolean tryAcquireDeniedBurstOneKey() {
    return Check.denied(burstDenying.tryAcquire(keys[0], 1.0));
  }

  /** {@link GatewayLimiter#tryAcquire} over 10,000 keys whose windows are full. */
  @Benchmark
  public boolean tryAcquireDeniedTenThousandKeys(ThreadKeys t) {
    return Check.denied(rpmDenying.tryAcquire(keys[t.next()], 1.0));
  }
}
