package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Two rooms over one in-memory store and its shared order (its wake-ups on the order's own
 * thread), many threads awaiting and cancelling at once while another drives time: every call
 * ends exactly once, every admission reaches its caller or is given back, and neither the rooms,
 * the order nor the upstream's slots keep anything behind.
 */
class UpstreamWaitingOrderConcurrencyTests {

  private static final int THREADS = 6;
  private static final int CALLS_PER_THREAD = 1_000;

  private final ManualScheduler scheduler = new ManualScheduler(new ManualTicker());
  private final RateLimitStore store = RateLimitStore.inMemory(scheduler.ticker());
  private final Upstream up = new Upstream("shared", null, null, ConcurrencyLimit.of(5));
  private final Budget tenantBudget = new Budget("tenant", WindowLimit.perMinute(1_000_000), null);
  private final Map<UpstreamWaitingRoom.Call, UpstreamWaitingRoom.Ending> endings =
      Collections.synchronizedMap(new IdentityHashMap<>());
  private final List<Throwable> failures = new CopyOnWriteArrayList<>();
  private final UpstreamWaitingRoom[] rooms = {room(), room()};
  private final ExecutorService async = Executors.newFixedThreadPool(3);
  private final AtomicLong delivered = new AtomicLong();
  private final AtomicLong abandoned = new AtomicLong();
  private final AtomicLong denied = new AtomicLong();
  private final AtomicLong cancelled = new AtomicLong();

  private UpstreamWaitingRoom room() {
    return new UpstreamWaitingRoom(scheduler.ticker(), scheduler, Map.of(), 200,
        UpstreamWaitingRoom.DEFAULT_MEMORY, (call, ending, waited) -> {
          if (endings.put(call, ending) != null) {
            failures.add(new AssertionError("a wait ended twice: " + call));
          }
        }, store.upstreamOrder(), List.of(up));
  }

  private UpstreamWaitingRoom.Attempt<Reservation> attempt(
      UpstreamWaitingRoom room, String tenant, int priority, boolean viaExecutor) {
    UpstreamTurn turn = new UpstreamTurn(tenant, 1, priority, 100, null);
    return UpstreamWaitingRoom.Attempt.inOrder(waiter -> {
      UpstreamTurn t = waiter == null ? turn : turn.waiting(waiter);
      return viaExecutor ? CompletableFuture.supplyAsync(() -> reserve(tenant, t), async)
          : CompletableFuture.completedFuture(reserve(tenant, t));
    }, Reservation::decision, ms -> new Reservation(Decision.retryableDeny(
        Reason.UPSTREAM_LIMIT, 0, ms, ms, up.budget().name()), List.of(tenantBudget),
        List.of(tenant), 0, 0, 0, 0), admitted -> {
          abandoned.incrementAndGet();
          giveBack(room, admitted);
        });
  }

  private Reservation reserve(String tenant, UpstreamTurn turn) {
    return store.reserve(List.of(tenantBudget), List.of(tenant), 1, Consumption.ofCall(100, 0),
        Composition.SEQUENTIAL, up, turn);
  }

  private void giveBack(UpstreamWaitingRoom room, Reservation admitted) {
    store.release(admitted);
    room.capacityMayHaveFreed(up.name());
  }

  @Test
  void everyCallEndsOnceEveryAdmissionIsDeliveredOrGivenBackAndNothingIsLeftInTheOrder()
      throws Exception {
    DrivenConcurrency.run(scheduler, THREADS, CALLS_PER_THREAD, random -> {
      UpstreamWaitingRoom room = rooms[random.nextInt(2)];
      String tenant = "t" + random.nextInt(10);
      int priority = random.nextInt(2);
      UpstreamWaitingRoom.Call call = new UpstreamWaitingRoom.Call(up.name(), tenant, 1,
          priority, 100, Duration.ofMillis(random.nextInt(60)));
      CompletableFuture<Reservation> f = room.await(call,
          attempt(room, tenant, priority, random.nextBoolean())).toCompletableFuture();
      f.whenComplete((r, failure) -> {
        if (failure != null) {
          if (!f.isCancelled()) {
            failures.add(failure);
          }
        } else if (r.decision().allowed()) {
          delivered.incrementAndGet();
          scheduler.schedule(() -> giveBack(room, r), TimeUnit.MILLISECONDS.toNanos(2));
        } else {
          denied.incrementAndGet();
        }
      });
      if (random.nextInt(10) == 0 && f.cancel(true)) {
        cancelled.incrementAndGet();
      }
      return f;
    }, failures, async);

    long calls = (long) THREADS * CALLS_PER_THREAD;
    assertThat(failures).isEmpty();
    assertThat(delivered.get() + denied.get() + cancelled.get()).isEqualTo(calls);
    assertThat(delivered.get()).isPositive();
    assertThat(denied.get()).isPositive();
    assertThat(store.upstreamStatus(up).inFlight()).isZero(); // every slot given back
    assertThat(store.upstreamOrder().waiting(up).toCompletableFuture().join()).isZero();
    assertThat(rooms[0].waiting(up.name()) + rooms[1].waiting(up.name())).isZero();
    assertThat(endings.values()).doesNotContain(UpstreamWaitingRoom.Ending.FAILED,
        UpstreamWaitingRoom.Ending.CLOSED);
    Map<UpstreamWaitingRoom.Ending, Long> told = new java.util.EnumMap<>(
        UpstreamWaitingRoom.Ending.class);
    endings.values().forEach(e -> told.merge(e, 1L, Long::sum));
    System.out.printf("%d calls over two rooms: %d admitted, %d denied, %d cancelled (%d"
        + " admissions given back); waits ended: %s%n", calls, delivered.get(), denied.get(),
        cancelled.get(), abandoned.get(), told);
  }
}
