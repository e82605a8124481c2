package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.HierarchicalLimiter;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.WindowLimit;
import java.util.List;
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
 * {@link HierarchicalLimiter} of three levels (organisation, API key, API key and model), each
 * with a window and a bucket, in both composition modes; and of two levels (API key, then API key
 * and model), the hierarchy of every per-key-and-model scope and {@code parent:} policy.
 *
 * <p>The many-keys cases use 10,000 leaves under 1,000 API keys under 10 organisations. The denied
 * cases are denied by the leaf's window, so the sequential mode charges the two levels above it on
 * every call (they never run out) and reserve-then-commit charges nothing.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class HierarchicalLimiterBenchmark {

  /** The composition mode under test. */
  @Param({"SEQUENTIAL", "RESERVE_COMMIT"})
  public Composition composition;

  private HierarchicalLimiter allowing;
  private HierarchicalLimiter twoLevels;
  private HierarchicalLimiter denying;
  private List<String> twoLevelKeys;
  private List<String>[] keys;

  /** Builds the limiters and spends the denied cases' leaf budgets. */
  @Setup
  public void setUp() {
    WindowLimit window = new WindowLimit(Limits.ALLOW_WINDOW_LIMIT, Limits.ALLOW_WINDOW);
    BucketLimit bucket = new BucketLimit(Limits.ALLOW_TOKENS, Limits.ALLOW_REFILL_PER_SECOND);
    Budget org = Budget.of("org", window, bucket);
    Budget apiKey = Budget.of("api-key", window, bucket);
    allowing = HierarchicalLimiter.builder()
        .level(org)
        .level(apiKey)
        .level(Budget.of("model", window, bucket))
        .composition(composition)
        .build();
    twoLevels = HierarchicalLimiter.builder()
        .level(Budget.of("api-key-2", window, bucket))
        .level(Budget.of("model-2", window, bucket))
        .composition(composition)
        .build();
    twoLevelKeys = List.of("sk-0", "sk-0:model-0");
    Check.allowed(twoLevels.allow(twoLevelKeys));
    denying = HierarchicalLimiter.builder()
        .level(org)
        .level(apiKey)
        .level(Budget.of("model", new WindowLimit(1, Limits.DENY_WINDOW), bucket))
        .composition(composition)
        .build();
    keys = leaves(Limits.KEY_COUNT);
    for (List<String> leaf : keys) {
      Check.allowed(allowing.allow(leaf));
      Check.allowed(denying.allow(leaf));
    }
  }

  @SuppressWarnings("unchecked")
  private static List<String>[] leaves(int n) {
    List<String>[] leaves = new List[n];
    for (int i = 0; i < n; i++) {
      String apiKey = "sk-" + (i % 1_000);
      leaves[i] = List.of("org-" + (i % 10), apiKey, apiKey + ":model-" + (i / 1_000));
    }
    return leaves;
  }


  /** Every thread calls with the same three keys. */
  @Benchmark
  public long allowedOneKey() {
    return Check.allowed(allowing.allow(keys[0])).remaining();
  }

  /**
   * Each thread calls with a leaf of its own (the leaves differ at every level: thread {@code i}
   * uses organisation {@code i}).
   */
  @Benchmark
  public long allowedOwnKey(ThreadKeys t) {
    return Check.allowed(allowing.allow(keys[t.index])).remaining();
  }

  /** Each thread walks 10,000 leaves. */
  @Benchmark
  public long allowedTenThousandKeys(ThreadKeys t) {
    return Check.allowed(allowing.allow(keys[t.next()])).remaining();
  }

  /** Every thread calls the two-level hierarchy with the same two keys. */
  @Benchmark
  public long allowedTwoLevelsOneKey() {
    return Check.allowed(twoLevels.allow(twoLevelKeys)).remaining();
  }

  /** {@link #allowedTwoLevelsOneKey} telling only the verdict. */
  @Benchmark
  public boolean tryAcquireTwoLevelsOneKey() {
    return Check.allowed(twoLevels.tryAcquire(twoLevelKeys));
  }

  /** {@link #allowedOneKey} telling only the verdict. */
  @Benchmark
  public boolean tryAcquireOneKey() {
    return Check.allowed(allowing.tryAcquire(keys[0]));
  }

  /** {@link #deniedOneKey} telling only the verdict. */
  @Benchmark
  public boolean tryAcquireDeniedOneKey() {
    return Check.denied(denying.tryAcquire(keys[0]));
  }

  /** The leaf's window is full: denied with RPM_LIMIT at the third level. */
  @Benchmark
  public long deniedOneKey() {
    return Check.denied(denying.allow(keys[0]), Reason.RPM_LIMIT).retryAfterMs();
  }

  /** Each thread walks 10,000 leaves whose windows are full. */
  @Benchmark
  public long deniedTenThousandKeys(ThreadKeys t) {
    return Check.denied(denying.allow(keys[t.next()]), Reason.RPM_LIMIT).retryAfterMs();
  }
}
