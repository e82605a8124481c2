package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Many threads await, cancel and signal at once while another drives time: every call ends
 * exactly once, every admission reaches its caller or is given back, and nothing is left behind.
 */
class UpstreamWaitingConcurrencyTests {

  private static final String UP = "shared";
  private static final int THREADS = 8;
  private static final int CALLS_PER_THREAD = 2_000;
  private static final int PERMITS = 5;

  private final ManualScheduler scheduler = new ManualScheduler(new ManualTicker());
  /** Every call told to the listener, by identity, with how its wait ended. */
  private final Map<UpstreamWaitingRoom.Call, UpstreamWaitingRoom.Ending> endings =
      Collections.synchronizedMap(new IdentityHashMap<>());
  private final UpstreamWaitingRoom room = new UpstreamWaitingRoom(scheduler.ticker(), scheduler,
      200, Duration.ofSeconds(1), (call, ending, waited) -> {
        if (endings.put(call, ending) != null) {
          this.failures.add(new AssertionError("a wait ended twice: " + call));
        }
      });
  private final ExecutorService store = Executors.newFixedThreadPool(3);

  private final AtomicInteger permits = new AtomicInteger(PERMITS);
  private final AtomicLong admittedByStore = new AtomicLong();
  private final AtomicLong abandoned = new AtomicLong();
  private final AtomicLong delivered = new AtomicLong();
  private final AtomicLong denied = new AtomicLong();
  private final AtomicLong cancelled = new AtomicLong();
  private final AtomicLong completions = new AtomicLong();
  private final AtomicLong attemptsAfterCancel = new AtomicLong();
  private final List<Throwable> failures = new CopyOnWriteArrayList<>();
  private final Map<Long, AtomicBoolean> left = new ConcurrentHashMap<>();

  private Decision decide() {
    for (;;) {
      int p = permits.get();
      if (p == 0) {
        return Decision.retryableDeny(Reason.UPSTREAM_LIMIT, 0, 2, 2, "upstream:" + UP);
      }
      if (permits.compareAndSet(p, p - 1)) {
        admittedByStore.incrementAndGet();
        return Decision.allow(0, 0, "upstream:" + UP);
      }
    }
  }

  private void giveBack() {
    permits.incrementAndGet();
    room.capacityMayHaveFreed(UP);
  }

  private UpstreamWaitingRoom.Attempt<Decision> attempt(long id, boolean async) {
    AtomicBoolean gone = new AtomicBoolean();
    AtomicInteger afterCancel = new AtomicInteger();
    left.put(id, gone);
    return new UpstreamWaitingRoom.Attempt<>() {
      @Override
      public CompletionStage<Decision> attempt() {
        if (gone.get()) { // at most the one chosen before the cancel may still begin
          attemptsAfterCancel.incrementAndGet();
          if (afterCancel.incrementAndGet() > 1) {
            failures.add(new AssertionError("call " + id + " tried again after its cancel"));
          }
        }
        return async ? CompletableFuture.supplyAsync(UpstreamWaitingConcurrencyTests.this::decide,
            store) : CompletableFuture.completedFuture(decide());
      }

      @Override
      public Decision decision(Decision result) {
        return result;
      }

      @Override
      public Decision denied(long retryAfterMs) {
        return Decision.retryableDeny(
            Reason.UPSTREAM_LIMIT, 0, retryAfterMs, retryAfterMs, "upstream:" + UP);
      }

      @Override
      public void abandon(Decision admitted) {
        abandoned.incrementAndGet();
        giveBack();
      }
    };
  }

  @Test
  void everyCallEndsExactlyOnceAndEveryAdmissionIsDeliveredOrGivenBack() throws Exception {
    AtomicLong ids = new AtomicLong();
    List<CompletableFuture<?>> all = DrivenConcurrency.run(scheduler, THREADS, CALLS_PER_THREAD,
        random -> {
          long id = ids.incrementAndGet();
          UpstreamWaitingRoom.Call call = new UpstreamWaitingRoom.Call(UP,
              "t" + random.nextInt(20), 1 + random.nextInt(3), random.nextInt(2), 100,
              Duration.ofMillis(random.nextInt(50)));
          CompletableFuture<Decision> f =
              room.await(call, attempt(id, random.nextBoolean())).toCompletableFuture();
          f.whenComplete((d, failure) -> {
            completions.incrementAndGet();
            if (failure != null) {
              if (!f.isCancelled()) {
                failures.add(failure);
              }
            } else if (d.allowed()) {
              delivered.incrementAndGet();
              scheduler.schedule(this::giveBack, TimeUnit.MILLISECONDS.toNanos(1 + id % 3));
            } else {
              denied.incrementAndGet();
            }
          });
          int r = random.nextInt(10);
          if (r == 0) {
            if (f.cancel(true)) {
              left.get(id).set(true);
              cancelled.incrementAndGet();
            }
          } else if (r == 1) {
            room.capacityMayHaveFreed(UP);
          }
          return f;
        }, failures, store);

    long calls = (long) THREADS * CALLS_PER_THREAD;
    assertThat(failures).isEmpty();
    assertThat(all).hasSize((int) calls).allMatch(CompletableFuture::isDone);
    assertThat(completions.get()).isEqualTo(calls);
    assertThat(delivered.get() + denied.get() + cancelled.get()).isEqualTo(calls);
    assertThat(admittedByStore.get()).isEqualTo(delivered.get() + abandoned.get());
    assertThat(permits.get()).isEqualTo(PERMITS);
    assertThat(attemptsAfterCancel.get()).isLessThanOrEqualTo(cancelled.get());
    assertThat(room.waiting(UP)).isZero();
    assertThat(scheduler.pending()).isZero();
    assertThat(delivered.get()).isPositive();
    Map<UpstreamWaitingRoom.Ending, Long> told = new EnumMap<>(
        UpstreamWaitingRoom.Ending.class);
    endings.values().forEach(e -> told.merge(e, 1L, Long::sum));
    assertThat(told.getOrDefault(UpstreamWaitingRoom.Ending.ADMITTED, 0L))
        .isPositive().isLessThanOrEqualTo(delivered.get());
    assertThat(told.getOrDefault(UpstreamWaitingRoom.Ending.CANCELLED, 0L))
        .isLessThanOrEqualTo(cancelled.get());
    assertThat(told.getOrDefault(UpstreamWaitingRoom.Ending.TIMED_OUT, 0L)
        + told.getOrDefault(UpstreamWaitingRoom.Ending.REFUSED, 0L)).isPositive()
        .isLessThanOrEqualTo(denied.get());
    assertThat(told).doesNotContainKeys(UpstreamWaitingRoom.Ending.FAILED,
        UpstreamWaitingRoom.Ending.DENIED, UpstreamWaitingRoom.Ending.CLOSED);
    assertThat(denied.get()).isPositive();
    System.out.printf("%d calls: %d admitted, %d denied, %d cancelled (%d admissions given back,"
        + " %d attempts begun after a cancel); waits ended: %s%n", calls, delivered.get(),
        denied.get(), cancelled.get(), abandoned.get(), attemptsAfterCancel.get(), told);
  }
}
