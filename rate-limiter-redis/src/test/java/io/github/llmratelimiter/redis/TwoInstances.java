package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Decision;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Concurrent calls through two gateway instances (two stores) at once, for the shared tests. */
final class TwoInstances {

  /** One call of a thread: the store it calls through, the thread's number, the call's. */
  interface Call {
    Decision run(RedisRateLimitStore store, int thread, int i);
  }

  private TwoInstances() {}

  /**
   * Runs {@code calls} calls from each of {@code threads} threads per store, every thread started
   * at once; returns every decision, and checks that no call failed on Redis.
   */
  static List<Decision> hammer(RedisRateLimitStore one, RedisRateLimitStore two, int threads,
      int calls, Call call) throws Exception {
    int all = 2 * threads;
    ExecutorService pool = Executors.newFixedThreadPool(all);
    try {
      CountDownLatch ready = new CountDownLatch(all);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<List<Decision>>> futures = new ArrayList<>();
      for (int t = 0; t < all; t++) {
        RedisRateLimitStore store = t % 2 == 0 ? one : two;
        int thread = t;
        Callable<List<Decision>> task = () -> {
          ready.countDown();
          go.await();
          List<Decision> mine = new ArrayList<>();
          for (int i = 0; i < calls; i++) {
            mine.add(call.run(store, thread, i));
          }
          return mine;
        };
        futures.add(pool.submit(task));
      }
      assertThat(ready.await(30, TimeUnit.SECONDS)).isTrue();
      go.countDown();
      List<Decision> decided = new ArrayList<>();
      for (Future<List<Decision>> f : futures) {
        decided.addAll(f.get(60, TimeUnit.SECONDS));
      }
      assertThat(decided).hasSize(all * calls);
      assertThat(one.errorCount() + two.errorCount()).isZero();
      return decided;
    } finally {
      pool.shutdownNow();
    }
  }
}
