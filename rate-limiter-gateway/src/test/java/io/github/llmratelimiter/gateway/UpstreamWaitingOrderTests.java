package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two waiting rooms (two gateway instances) in front of one in-memory store and its shared order
 * of an upstream's waiting calls: the call first in the order goes first, whichever room it waits
 * in; a call that may not wait is refused while others wait; calls that leave take their place in
 * the order with them; a lost wake-up is made up by a poll, only while calls wait; and a room whose
 * order does not answer still decides its calls.
 */
class UpstreamWaitingOrderTests {

  private final ManualScheduler scheduler = new ManualScheduler(new ManualTicker());
  private final RateLimitStore inMemory = RateLimitStore.inMemory(scheduler.ticker());
  private final DrivenOrderStore store = new DrivenOrderStore(inMemory, scheduler);
  private final Budget tenantBudget = new Budget("tenant", WindowLimit.perMinute(1_000), null);
  private final Upstream up = new Upstream("openai", null, null, ConcurrencyLimit.of(1));
  private final List<UpstreamWaitingRoom.Ending> endings =
      Collections.synchronizedList(new ArrayList<>());
  private final UpstreamWaitingRoom a = room(store, store.upstreamOrder());
  private final UpstreamWaitingRoom b = room(store, store.upstreamOrder());
  private int attempts;

  private UpstreamWaitingRoom room(RateLimitStore decides, UpstreamOrder order) {
    return new UpstreamWaitingRoom(scheduler.ticker(), scheduler, Map.of(), 100,
        UpstreamWaitingRoom.DEFAULT_MEMORY, (call, ending, nanos) -> endings.add(ending), order,
        List.of(up));
  }

  @AfterEach
  void close() {
    a.close();
    b.close();
  }

  /** Decides a call against its tenant's budget and the upstream, with its turn in the order. */
  private UpstreamWaitingRoom.Attempt<Reservation> attempt(RateLimitStore decides, String tenant) {
    return attempt(decides, tenant, tenantBudget);
  }

  private UpstreamWaitingRoom.Attempt<Reservation> attempt(
      RateLimitStore decides, String tenant, Budget own) {
    UpstreamTurn turn = new UpstreamTurn(tenant, 1, 0, 100, null);
    return UpstreamWaitingRoom.Attempt.inOrder(waiter -> {
      attempts++;
      return decides.reserveAsync(List.of(own), List.of(tenant), 1,
          Consumption.ofCall(100, 0), Composition.SEQUENTIAL, up,
          waiter == null ? turn : turn.waiting(waiter));
    }, Reservation::decision, ms -> new Reservation(Decision.retryableDeny(Reason.UPSTREAM_LIMIT,
        0, ms, ms, up.budget().name()), List.of(tenantBudget), List.of(tenant), 0, 0, 0, 0),
        decides::release);
  }

  private CompletableFuture<Reservation> call(UpstreamWaitingRoom room, String tenant,
      Duration maxWait) {
    return call(room, store, tenant, maxWait);
  }

  private CompletableFuture<Reservation> call(UpstreamWaitingRoom room, RateLimitStore decides,
      String tenant, Duration maxWait) {
    return room.await(new UpstreamWaitingRoom.Call(up.name(), tenant, 1, 0, 100, maxWait),
        attempt(decides, tenant)).toCompletableFuture();
  }

  private long inOrder() {
    return inOrder(up);
  }

  private long inOrder(Upstream upstream) {
    return store.upstreamOrder().waiting(upstream).toCompletableFuture().join();
  }

  /** Gives back a call's slot and says so from one room, as the gateway does; runs the wake-ups. */
  private void release(Reservation r, UpstreamWaitingRoom from) {
    store.release(r);
    from.capacityMayHaveFreed(up.name());
    scheduler.advanceMillis(0);
  }

  /**
   * A waiting call admitted without the order (the store's failure policy or local fallback
   * answers in an outage, never reading the order) still leaves it, so that it does not stay
   * first and hold every instance's calls until its deadline.
   */
  @Test
  void aCallAdmittedWithoutTheOrderLeavesIt() {
    Reservation x = call(a, "x", Duration.ofSeconds(30)).join();
    UpstreamTurn turn = new UpstreamTurn("t1", 1, 0, 100, null);
    boolean[] outage = {false};
    UpstreamWaitingRoom.Attempt<Reservation> policyInOutage = UpstreamWaitingRoom.Attempt.inOrder(
        waiter -> outage[0]
            ? CompletableFuture.completedFuture(new Reservation(Decision.allow(0, 0, "tenant"),
                List.of(tenantBudget), List.of("t1"), 0, 0, 0, 0)) // the policy, not the store
            : store.reserveAsync(List.of(tenantBudget), List.of("t1"), 1,
                Consumption.ofCall(100, 0), Composition.SEQUENTIAL, up,
                waiter == null ? turn : turn.waiting(waiter)),
        Reservation::decision, ms -> new Reservation(Decision.retryableDeny(
            Reason.UPSTREAM_LIMIT, 0, ms, ms, up.budget().name()), List.of(tenantBudget),
            List.of("t1"), 0, 0, 0, 0), r -> { });
    CompletableFuture<Reservation> waiting = b.await(new UpstreamWaitingRoom.Call(up.name(), "t1",
        1, 0, 100, Duration.ofSeconds(30)), policyInOutage).toCompletableFuture();
    scheduler.advanceMillis(0);
    assertThat(inOrder()).isEqualTo(1);

    outage[0] = true;
    b.capacityMayHaveFreed(up.name());
    scheduler.advanceMillis(0);

    assertThat(waiting.join().decision().allowed()).isTrue();
    assertThat(inOrder()).as("the call admitted by the policy left the order").isZero();
    store.release(x);
    assertThat(call(a, "t2", Duration.ofSeconds(30)).join().decision().allowed()).isTrue();
  }

  @Test
  void theCallFirstInTheSharedOrderGoesFirstWhicheverRoomItWaitsIn() {
    Reservation x = call(a, "x", Duration.ofSeconds(30)).join();
    CompletableFuture<Reservation> b1 = call(b, "t1", Duration.ofSeconds(30));
    CompletableFuture<Reservation> a1 = call(a, "t2", Duration.ofSeconds(30));
    scheduler.advanceMillis(0);
    assertThat(inOrder()).isEqualTo(2);
    assertThat(a.waiting(up.name())).isEqualTo(1);
    assertThat(b.waiting(up.name())).isEqualTo(1);

    int tried = attempts;
    release(x, a); // said on A: B's call is first, and B tries it

    assertThat(b1.join().decision().allowed()).isTrue();
    assertThat(a1).isNotDone();
    // b1 once; then a1, first now, once (B told A): A never tried a1 while b1 was first
    assertThat(attempts - tried).isEqualTo(2);
    assertThat(inOrder()).isEqualTo(1);

    release(b1.join(), b);

    assertThat(a1.join().decision().allowed()).isTrue();
    assertThat(inOrder()).isZero();
    assertThat(endings).containsExactly(
        UpstreamWaitingRoom.Ending.ADMITTED, UpstreamWaitingRoom.Ending.ADMITTED);
  }

  @Test
  void aCallThatMayNotWaitIsRefusedWhileACallWaitsOnAnotherInstanceAndChargesNothing() {
    Reservation x = call(a, "x", Duration.ofSeconds(30)).join();
    CompletableFuture<Reservation> b1 = call(b, "t1", Duration.ofSeconds(30));
    store.release(x); // the slot is free, but nobody said so yet

    Reservation now = call(a, "t2", Duration.ZERO).join();

    assertThat(now.decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(now.decision().retryable()).isTrue();
    assertThat(store.reserve(List.of(tenantBudget), List.of("t2"), 1, Consumption.ofCall(1, 0),
        Composition.SEQUENTIAL).decision().remaining()).isEqualTo(999); // its budget untouched
    a.capacityMayHaveFreed(up.name());
    scheduler.advanceMillis(0);
    assertThat(b1.join().decision().allowed()).isTrue();
  }

  @Test
  void aCallWhoseWaitPassesLeavesTheSharedOrder() {
    call(a, "x", Duration.ofSeconds(30)).join();
    CompletableFuture<Reservation> a1 = call(a, "t1", Duration.ofSeconds(5));
    CompletableFuture<Reservation> b1 = call(b, "t2", Duration.ofSeconds(30));
    scheduler.advanceMillis(0);
    assertThat(inOrder()).isEqualTo(2);

    scheduler.advanceMillis(5_000);

    assertThat(a1.join().decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(inOrder()).isEqualTo(1);
    assertThat(b1).isNotDone();
    assertThat(endings).containsExactly(UpstreamWaitingRoom.Ending.TIMED_OUT);
  }

  @Test
  void aCallItsOwnBudgetDeniesOnItsTurnLeavesTheSharedOrderWithThatDeny() {
    Budget poor = new Budget("poor", WindowLimit.perMinute(1), null);
    Reservation x = call(a, "x", Duration.ofSeconds(30)).join();
    CompletableFuture<Reservation> p = a.await(
        new UpstreamWaitingRoom.Call(up.name(), "p", 1, 0, 100, Duration.ofSeconds(30)),
        attempt(store, "p", poor)).toCompletableFuture();
    CompletableFuture<Reservation> b1 = call(b, "t1", Duration.ofSeconds(30));
    scheduler.advanceMillis(0);
    assertThat(inOrder()).isEqualTo(2);
    store.acquire(List.of(poor), List.of("p"), 1, Composition.SEQUENTIAL); // its own minute used

    release(x, a);

    assertThat(p.join().decision().reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(b1.join().decision().allowed()).isTrue(); // next in the order, on the other room
    assertThat(inOrder()).isZero();
    assertThat(endings).containsExactly(
        UpstreamWaitingRoom.Ending.DENIED, UpstreamWaitingRoom.Ending.ADMITTED);
  }

  @Test
  void aCancelledCallLeavesTheSharedOrderAtOnceAndIsNeverTried() {
    Reservation x = call(a, "x", Duration.ofSeconds(30)).join();
    CompletableFuture<Reservation> a1 = call(a, "t1", Duration.ofSeconds(30));
    scheduler.advanceMillis(0);
    int tried = attempts;

    a1.cancel(false);

    assertThat(inOrder()).isZero();
    assertThat(a.waiting(up.name())).isZero();
    release(x, b);
    assertThat(attempts).isEqualTo(tried);
    assertThat(endings).containsExactly(UpstreamWaitingRoom.Ending.CANCELLED);
  }

  @Test
  void aLostWakeUpIsMadeUpByAPollAndNoRoomPollsWithoutCallsWaitingInIt() {
    store.dropSignals = true;
    Reservation x = call(a, "x", Duration.ofSeconds(30)).join();
    CompletableFuture<Reservation> b1 = call(b, "t1", Duration.ofSeconds(30));
    scheduler.advanceMillis(0);
    release(x, a);
    assertThat(b1).isNotDone();

    scheduler.advance(store.upstreamOrder().pollInterval());

    assertThat(b1.join().decision().allowed()).isTrue();
    int asked = store.firsts;
    scheduler.advanceMillis(60_000);
    assertThat(store.firsts).isEqualTo(asked);
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void aRoomWhoseOrderDoesNotAnswerTriesItsOwnFirstCallAndEndsEveryWaitOnce() {
    Reservation x = call(a, "x", Duration.ofSeconds(30)).join();
    store.failing = true;
    CompletableFuture<Reservation> a1 = call(a, "t1", Duration.ofSeconds(30));
    CompletableFuture<Reservation> a2 = call(a, "t2", Duration.ofSeconds(5));
    scheduler.advanceMillis(0);
    assertThat(a1).isNotDone();

    release(x, a);

    assertThat(a1.join().decision().allowed()).isTrue();
    scheduler.advanceMillis(5_000);
    assertThat(a2.join().decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(endings).containsExactly(
        UpstreamWaitingRoom.Ending.ADMITTED, UpstreamWaitingRoom.Ending.TIMED_OUT);
  }

  @Test
  void theEnforcerDecidesEveryUpstreamCallInTheOrderAndSettlesItThere() {
    Upstream tokens = new Upstream("azure", null, ModelTokenLimit.perMinute(100_000),
        ConcurrencyLimit.of(1));
    UpstreamWaitingRoom room = new UpstreamWaitingRoom(scheduler.ticker(), scheduler, Map.of(),
        100, UpstreamWaitingRoom.DEFAULT_MEMORY, (call, ending, nanos) -> { },
        store.upstreamOrder(), List.of(tokens));
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("chat", KeyScope.API_KEY, tenantBudget)
        .policy("batch", KeyScope.API_KEY, tenantBudget)
        .defaultPolicy("chat")
        .build();
    UpstreamRoutes routes = UpstreamRoutes.builder()
        .upstream(tokens, List.of(), List.of("chat", "batch")).build();
    UpstreamWaits waits = new UpstreamWaits(Map.of("chat", Duration.ofSeconds(30)), Map.of(),
        Map.of(), Map.of(), Duration.ZERO); // batch: no wait
    RateLimitEnforcer enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY,
        List::of, RateLimitPlanResolver.fixed(policies.defaultPlan()), routes, room, waits);

    RateLimitOutcome first = enforcer.acquire("chat", RateLimitKey.of("t1", null), 1, () -> 100);
    CompletableFuture<RateLimitOutcome> waiting = enforcer.acquireAsync(
        "chat", RateLimitKey.of("t2", null), 1, () -> 100).toCompletableFuture();
    assertThat(inOrder(tokens)).isEqualTo(1);
    first.slots().release(); // the slot is free, but t2 is first in the order

    RateLimitOutcome batch = enforcer.acquire("batch", RateLimitKey.of("t3", null), 1, () -> 100);
    assertThat(batch.decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    scheduler.advanceMillis(0);
    assertThat(waiting.join().decision().allowed()).isTrue();
    assertThat(inOrder(tokens)).isZero();

    first.modelTokens().settle(40L, false);
    assertThat(store.settles).isEqualTo(1);
  }

  @Test
  void theInMemoryOrdersOwnWakeUpsReachTheOtherInstance() throws Exception {
    UpstreamOrder real = inMemory.upstreamOrder();
    try (UpstreamWaitingRoom one = room(inMemory, real);
        UpstreamWaitingRoom two = room(inMemory, real)) {
      Reservation x = call(one, inMemory, "x", Duration.ofSeconds(30)).join();
      CompletableFuture<Reservation> waiting = call(two, inMemory, "t1", Duration.ofSeconds(30));
      assertThat(waiting).isNotDone();

      inMemory.release(x);
      one.capacityMayHaveFreed(up.name()); // told to two on the order's own thread

      assertThat(waiting.get(10, TimeUnit.SECONDS).decision().allowed()).isTrue();
    }
  }
}
