package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The waiting rooms' concurrency runs: threads that make calls at once while another drives the
 * scheduler's time a millisecond at a time.
 */
final class DrivenConcurrency {

  /** Makes one call, with the thread's own random draws, and returns its stage. */
  @FunctionalInterface
  interface Caller {
    CompletableFuture<?> call(SplittableRandom random);
  }

  private DrivenConcurrency() {}

  /**
   * Runs {@code threads} threads of {@code callsPerThread} calls each while time is driven, waits
   * for them and for every call's stage, stops the clock and the executor, then runs the tasks of
   * one more second (the last give-backs). A thread that throws is recorded in {@code failures}.
   *
   * @return every call's stage
   */
  static List<CompletableFuture<?>> run(ManualScheduler scheduler, int threads,
      int callsPerThread, Caller caller, List<Throwable> failures, ExecutorService executor)
      throws Exception {
    AtomicBoolean running = new AtomicBoolean(true);
    Thread clock = new Thread(() -> {
      while (running.get()) {
        scheduler.advanceMillis(1);
        Thread.onSpinWait();
      }
    });
    clock.start();
    CountDownLatch done = new CountDownLatch(threads);
    List<CompletableFuture<?>> all = new CopyOnWriteArrayList<>();
    for (int i = 0; i < threads; i++) {
      long draw = i;
      new Thread(() -> {
        SplittableRandom random = new SplittableRandom(draw);
        try {
          for (int c = 0; c < callsPerThread; c++) {
            all.add(caller.call(random));
          }
        } catch (Throwable e) {
          failures.add(e);
        } finally {
          done.countDown();
        }
      }).start();
    }
    assertThat(done.await(2, TimeUnit.MINUTES)).isTrue();
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
        .handle((x, e) -> null).get(1, TimeUnit.MINUTES);
    running.set(false);
    clock.join(60_000);
    executor.shutdown();
    assertThat(executor.awaitTermination(1, TimeUnit.MINUTES)).isTrue();
    scheduler.advance(Duration.ofSeconds(1));
    return all;
  }
}
