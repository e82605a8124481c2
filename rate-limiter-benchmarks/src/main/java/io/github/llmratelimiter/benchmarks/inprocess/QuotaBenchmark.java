package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.time.ZoneId;
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
import org.openjdk.jmh.annotations.TearDown;

/**
 * What quotas add to a decision on the in-memory store: one call reserved and settled on a budget
 * with a window, a bucket and a model-token window, without quotas and with two (a daily cost
 * quota in Europe/Berlin and a monthly model-token quota, both with thresholds), in both
 * composition modes, over 10,000 keys.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class QuotaBenchmark {

  /** The composition mode under test. */
  @Param({"SEQUENTIAL", "RESERVE_COMMIT"})
  public Composition composition;

  private RateLimitStore store;
  private List<Budget> plain;
  private List<Budget> withQuotas;
  private String[] keys;
  private final Consumption estimate = new Consumption(1, 1_000, 5_000);
  private final Consumption actual = Consumption.ofCall(800, 4_000);

  /** Builds the store and the two budgets. */
  @Setup
  public void setUp() {
    store = RateLimitStore.inMemory();
    keys = Limits.keys("tenant", Limits.KEY_COUNT);
    Budget budget = new Budget("chat", new WindowLimit(Limits.ALLOW_WINDOW_LIMIT,
        Limits.ALLOW_WINDOW), new BucketLimit(Limits.ALLOW_TOKENS, Limits.ALLOW_REFILL_PER_SECOND),
        new ModelTokenLimit(Long.MAX_VALUE / 4, Duration.ofMillis(Limits.ALLOW_WINDOW_MS)));
    plain = List.of(budget);
    Budget quotas = new Budget("quota-chat", budget.window(), budget.bucket(),
        budget.modelTokens(), null, List.of(
            QuotaLimit.of("daily-cost", QuotaUnit.COST, QuotaLimit.MAX_LIMIT, QuotaPeriod.DAY)
                .inZone(ZoneId.of("Europe/Berlin")).withThresholds(50, 80, 100),
            QuotaLimit.of("monthly-tokens", QuotaUnit.TOKENS, QuotaLimit.MAX_LIMIT,
                QuotaPeriod.MONTH).withThresholds(80)), null);
    withQuotas = List.of(quotas);
  }

  /** Closes the store. */
  @TearDown
  public void tearDown() {
    store.close();
  }

  /** Reserve and settle, no quota, 10,000 keys. */
  @Benchmark
  public long reserveAndSettleWithoutQuotas(ThreadKeys t) {
    return call(plain, keys[t.next()]);
  }

  /** Reserve and settle, two quotas, 10,000 keys. */
  @Benchmark
  public long reserveAndSettleWithTwoQuotas(ThreadKeys t) {
    return call(withQuotas, keys[t.next()]);
  }

  private long call(List<Budget> levels, String key) {
    Reservation r = store.reserve(levels, List.of(key), 1, estimate, composition);
    Check.allowed(r.decision());
    store.reconcile(r, actual);
    return r.decision().remaining();
  }
}
