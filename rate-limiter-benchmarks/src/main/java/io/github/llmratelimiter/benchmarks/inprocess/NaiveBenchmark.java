package io.github.llmratelimiter.benchmarks.inprocess;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Peer: the {@link NaiveLimiter} baseline, with the same limits as the limiter's benchmarks; every
 * case looks its key up in the map, as the limiter does.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class NaiveBenchmark {

  private NaiveLimiter allowing;
  private NaiveLimiter denying;
  private String[] keys;

  /** Builds the limiters and spends the denied cases' budgets. */
  @Setup
  public void setUp() {
    keys = Limits.keys("tenant", Limits.KEY_COUNT);
    allowing = new NaiveLimiter(
        Limits.ALLOW_WINDOW_LIMIT, Limits.ALLOW_WINDOW, Limits.ALLOW_TOKENS,
        Limits.ALLOW_REFILL_PER_SECOND);
    denying = new NaiveLimiter(
        1, Limits.DENY_WINDOW, Limits.ALLOW_TOKENS, Limits.ALLOW_REFILL_PER_SECOND);
    for (String key : keys) {
      Check.allowed(allowing.allow(key));
      Check.allowed(denying.allow(key));
    }
  }


  /** Every thread calls with the same key. */
  @Benchmark
  public boolean allowedOneKey() {
    return Check.allowed(allowing.allow(keys[0]));
  }

  /** Each thread calls with a key of its own. */
  @Benchmark
  public boolean allowedOwnKey(ThreadKeys t) {
    return Check.allowed(allowing.allow(t.ownKey));
  }

  /** Each thread walks 10,000 keys. */
  @Benchmark
  public boolean allowedTenThousandKeys(ThreadKeys t) {
    return Check.allowed(allowing.allow(keys[t.next()]));
  }

  /** The window is full. */
  @Benchmark
  public boolean deniedOneKey() {
    return Check.denied(denying.allow(keys[0]));
  }

  /** Each thread walks 10,000 keys whose windows are full. */
  @Benchmark
  public boolean deniedTenThousandKeys(ThreadKeys t) {
    return Check.denied(denying.allow(keys[t.next()]));
  }
}
