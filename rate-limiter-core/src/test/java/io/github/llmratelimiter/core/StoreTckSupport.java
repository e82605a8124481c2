package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** What every store test suite shares: a fresh store per test on a {@link ManualTicker}. */
public abstract class StoreTckSupport {

  protected ManualTicker ticker;
  protected RateLimitStore store;

  /**
   * Returns a new store with no state that reads time from {@code ticker}.
   *
   * @param ticker the test's clock
   * @return the store under test
   */
  protected abstract RateLimitStore newStore(ManualTicker ticker) throws Exception;

  /**
   * Runs the store's own housekeeping over every key it tracks, as it runs in the background while
   * keys sit idle; a store whose housekeeping no test can drive (Redis expires keys on its own
   * clock) does nothing.
   */
  protected void runMaintenance() {}

  /**
   * Returns the administration of the store under test, which every store under these suites
   * offers.
   *
   * @return the store's administration
   */
  protected StoreAdministration admin() {
    return store.administration().orElseThrow();
  }

  /**
   * Returns the plan assignments of the store under test, which every store under these suites
   * keeps.
   *
   * @return the store's plan assignments
   */
  protected PlanAssignments plans() {
    return store.planAssignments().orElseThrow();
  }

  @BeforeEach
  void createStore() throws Exception {
    ticker = new ManualTicker();
    store = newStore(ticker);
  }

  @AfterEach
  void closeStore() {
    store.close();
  }

  /**
   * Checks the retry advice on random budgets, costs, estimates and instants, with refills and
   * costs whose waits fall on floating-point ties: after each retryable deny it waits exactly the
   * advised time, with no other call in between, and calls again. Reserve-then-commit: the call
   * passes every level. Sequential: the component that denied admits it (a component its own deny
   * charged, or one it never reached, may deny instead). A deny that is not retryable still denies
   * a year later.
   *
   * @param mode the composition under test
   * @param draw the number that fixes the random calls (the same number, the same calls)
   * @param modelTokens whether levels may limit model tokens (calls then {@code reserve})
   * @return how many retries were waited out
   */
  protected int waitOutAdvisedRetries(Composition mode, long draw, boolean modelTokens) {
    double[] refills = {0, 0.1, 0.3, 1.0 / 3, 0.7, 2.5, 3, 7, 10};
    double[] costs = {0.1, 0.2, 0.3, 1.0 / 3, 0.7, 1, 1.5, 2.3};
    Random rnd = new Random(draw);
    int waited = 0;
    for (int trial = 0; trial < 120; trial++) {
      List<Budget> levels = new ArrayList<>();
      List<String> keys = new ArrayList<>();
      for (int i = 0, n = 1 + rnd.nextInt(2); i < n; i++) {
        WindowLimit window = rnd.nextInt(3) == 0 ? null : new WindowLimit(1 + rnd.nextInt(4),
            Duration.ofMillis(new long[] {250, 1000, 7000}[rnd.nextInt(3)]));
        BucketLimit bucket = rnd.nextInt(3) == 0 ? null
            : new BucketLimit(new double[] {1, 2.5, 3}[rnd.nextInt(3)],
                refills[rnd.nextInt(refills.length)]);
        ModelTokenLimit tokens = modelTokens && rnd.nextBoolean()
            ? new ModelTokenLimit(1000, Duration.ofMillis(new long[] {300, 2000}[rnd.nextInt(2)]))
            : null;
        if (window == null && bucket == null && tokens == null) {
          window = new WindowLimit(2, Duration.ofSeconds(1));
        }
        levels.add(new Budget("p" + trial + "-" + i, window, bucket, tokens));
        keys.add("k" + i);
      }
      for (int call = 0; call < 12; call++) {
        switch (rnd.nextInt(4)) {
          case 0 -> ticker.advanceMillis(rnd.nextInt(300));
          case 1 -> ticker.advanceNanos(rnd.nextInt(1_000_000_000));
          default -> { } // an instant of its own, or the same as the last call
        }
        double cost = costs[rnd.nextInt(costs.length)];
        long estimate = modelTokens ? rnd.nextInt(700) : 0;
        Decision d = call(levels, keys, cost, estimate, mode);
        String what = "trial " + trial + " call " + call + ": " + levels + " cost " + cost
            + " estimate " + estimate + " " + d;
        if (d.allowed() || d.reason() == Reason.COST_EXCEEDS_CAPACITY) {
          continue;
        }
        if (!d.retryable()) {
          ticker.advance(Duration.ofDays(365));
          assertThat(call(levels, keys, cost, estimate, mode).allowed()).as(what).isFalse();
          break;
        }
        ticker.advanceMillis(d.retryAfterMs());
        Decision again = call(levels, keys, cost, estimate, mode);
        waited++;
        if (mode == Composition.RESERVE_COMMIT) {
          assertThat(again.allowed()).as(what + " then " + again).isTrue();
        } else {
          assertThat(again.reason() == d.reason() && again.level().equals(d.level()))
              .as(what + " then " + again).isFalse();
        }
      }
    }
    return waited;
  }

  private Decision call(
      List<Budget> levels, List<String> keys, double cost, long estimate, Composition mode) {
    return estimate == 0 ? store.acquire(levels, keys, cost, mode)
        : store.reserve(levels, keys, cost, estimate, mode).decision();
  }

  /**
   * Reserves one call of cost 1 on a single budget.
   *
   * @param b the budget
   * @param key the key
   * @param estimate the estimated model tokens
   * @param mode the composition
   * @return what the store reserved
   */
  protected Reservation reserve(Budget b, String key, long estimate, Composition mode) {
    return store.reserve(List.of(b), List.of(key), 1, estimate, mode);
  }

  /** Runs {@code task} on {@code threads} threads released together; returns their results. */
  protected static <T> List<T> runConcurrently(int threads, Callable<T> task) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch ready = new CountDownLatch(threads);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<T>> futures = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        futures.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          return task.call();
        }));
      }
      assertThat(ready.await(30, TimeUnit.SECONDS)).isTrue();
      go.countDown();
      List<T> results = new ArrayList<>();
      for (Future<T> f : futures) {
        results.add(f.get(60, TimeUnit.SECONDS));
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }
}
