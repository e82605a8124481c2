package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
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

  @BeforeEach
  void createStore() throws Exception {
    ticker = new ManualTicker();
    store = newStore(ticker);
  }

  @AfterEach
  void closeStore() {
    store.close();
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
