package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
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
 * {@link StoreAdministration#top} of the default in-memory store at many tracked keys: what one {@code
 * GET /actuator/ratelimiter?top=N} costs per budget.
 *
 * <p>Uses only {@code RateLimitStore.inMemory(ticker, max)}, {@code acquire} and {@code top}, so
 * the same file measures an older core too. The setup tracks {@code keys} keys used once in a
 * window of ten an hour and five busier ones, then waits (at most two minutes) until {@code top(1)}
 * names the busiest: a store that ranks from maintained candidates has made a pass by then, while
 * one that reads every key answers at once. The store's own background maintenance runs during
 * the measurement, as it does in an application.
 *
 * <p>Run with {@code java -cp rate-limiter-benchmarks/target/benchmarks.jar org.openjdk.jmh.Main
 * InMemoryTopBenchmark -f 1 -wi 2 -i 5 -w 2s -r 3s}; for an older core, check out its {@code
 * rate-limiter-core/src/main} first and rebuild the jar.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class InMemoryTopBenchmark {

  /** Keys tracked besides the five busy ones. */
  @Param({"1000000"})
  public int keys;

  private final Budget budget = new Budget("top", new WindowLimit(10, Duration.ofHours(1)), null);
  private RateLimitStore store;
  private StoreAdministration admin;

  /** Tracks the keys and waits until {@code top} ranks them. */
  @Setup
  public void setUp() {
    store = RateLimitStore.inMemory(Ticker.system(), 2L * keys + 10);
    admin = store.administration().orElseThrow();
    for (int i = 0; i < keys; i++) {
      Check.allowed(store.acquire(budget, "quiet-" + i, 1, Composition.SEQUENTIAL));
    }
    for (int h = 0; h < 5; h++) {
      for (int c = 0; c < 9 - h; c++) {
        Check.allowed(store.acquire(budget, "busy-" + h, 1, Composition.SEQUENTIAL));
      }
    }
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (!busiest(admin.top(budget, 1))) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("top(1) did not name busy-0 within two minutes");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
  }

  /** Stops the store's maintenance. */
  @TearDown
  public void tearDown() {
    store.close();
  }

  private static boolean busiest(List<KeySnapshot> top) {
    return !top.isEmpty() && top.get(0).key().equals("busy-0");
  }

  /** The busiest key. */
  @Benchmark
  public List<KeySnapshot> top1() {
    List<KeySnapshot> top = admin.top(budget, 1);
    if (!busiest(top)) {
      throw new IllegalStateException("top(1) lost busy-0: " + top);
    }
    return top;
  }

  /** The endpoint's default list of 20. */
  @Benchmark
  public List<KeySnapshot> top20() {
    List<KeySnapshot> top = admin.top(budget, 20);
    if (top.size() != 20 || !busiest(top)) {
      throw new IllegalStateException("top(20) is not the 20 busiest: " + top);
    }
    return top;
  }
}
