package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;

/**
 * Prints the heap the default in-memory store retains per tracked key: used heap after a full GC,
 * before and after tracking a million keys (argument: another count) of a budget with a window of
 * ten an hour and a bucket, each key charged once. Keys are {@code tenant-N} strings, counted too.
 *
 * <p>Run with {@code java -cp rate-limiter-benchmarks/target/benchmarks.jar
 * io.github.llmratelimiter.benchmarks.inprocess.TrackedKeyFootprint}.
 */
public final class TrackedKeyFootprint {

  private TrackedKeyFootprint() {}

  /**
   * Measures and prints.
   *
   * @param args the number of keys, 1,000,000 if none
   */
  public static void main(String[] args) {
    int keys = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    Budget budget = Budget.of("footprint", new WindowLimit(10, Duration.ofHours(1)),
        new BucketLimit(10, 0.001));
    RateLimitStore store = RateLimitStore.inMemory(Ticker.system(), 2L * keys);
    store.acquire(budget, "warm-up", 1, Composition.SEQUENTIAL);
    long before = usedAfterGc();
    for (int i = 0; i < keys; i++) {
      Check.allowed(store.acquire(budget, "tenant-" + i, 1, Composition.SEQUENTIAL));
    }
    long after = usedAfterGc();
    System.out.printf("%,d keys tracked: %,d bytes retained, %.0f bytes per key%n",
        store.trackedKeys(budget), after - before, (double) (after - before) / keys);
    store.close();
  }

  private static long usedAfterGc() {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return rt.totalMemory() - rt.freeMemory();
  }
}
