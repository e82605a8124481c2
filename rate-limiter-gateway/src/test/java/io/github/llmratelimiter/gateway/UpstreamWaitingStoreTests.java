package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * The waiting room in front of the in-memory store's upstreams: a call the upstream denies is
 * admitted when the upstream's state lapses, as the store's deny said, or when a slot, a
 * settlement or a provider's report frees capacity, and not an attempt more.
 */
class UpstreamWaitingStoreTests {

  private final ManualScheduler scheduler = new ManualScheduler(new ManualTicker());
  private final RateLimitStore store = RateLimitStore.inMemory(scheduler.ticker());
  private final UpstreamWaitingRoom room = new UpstreamWaitingRoom(
      scheduler.ticker(), scheduler, 100, UpstreamWaitingRoom.DEFAULT_MEMORY);
  private final Budget tenantBudget = new Budget("tenant", WindowLimit.perMinute(1_000), null);
  private final List<Reservation> abandoned = new ArrayList<>();
  private int attempts;

  private final class StoreAttempt implements UpstreamWaitingRoom.Attempt<Reservation> {
    final String tenant;
    final long tokens;
    final Upstream upstream;

    StoreAttempt(String tenant, long tokens, Upstream upstream) {
      this.tenant = tenant;
      this.tokens = tokens;
      this.upstream = upstream;
    }

    @Override
    public CompletionStage<Reservation> attempt() {
      attempts++;
      return store.reserveAsync(List.of(tenantBudget), List.of(tenant), 1,
          Consumption.ofCall(tokens, 0), Composition.SEQUENTIAL, upstream);
    }

    @Override
    public Decision decision(Reservation result) {
      return result.decision();
    }

    @Override
    public Reservation denied(long retryAfterMs) {
      return new Reservation(Decision.retryableDeny(Reason.UPSTREAM_LIMIT, 0, retryAfterMs,
          retryAfterMs, upstream.budget().name()), List.of(tenantBudget), List.of(tenant), 0, 0,
          0, 0);
    }

    @Override
    public void abandon(Reservation admitted) {
      abandoned.add(admitted);
      store.release(admitted);
      store.reconcile(admitted, Consumption.NONE);
    }
  }

  private CompletableFuture<Reservation> call(String tenant, Upstream upstream, Duration maxWait) {
    return room.await(new UpstreamWaitingRoom.Call(upstream.name(), tenant, 1, 1, 100, maxWait),
        new StoreAttempt(tenant, 100, upstream)).toCompletableFuture();
  }

  @Test
  void aCallWaitsUntilTheUpstreamsWindowFreesAndIsAdmittedThenWithoutPolling() {
    Upstream up = new Upstream("openai", WindowLimit.perMinute(2), null, null);
    assertThat(call("a", up, Duration.ofMinutes(2))).isCompleted();
    scheduler.advanceMillis(10_000);
    assertThat(call("b", up, Duration.ofMinutes(2))).isCompleted();
    scheduler.advanceMillis(10_000);

    CompletableFuture<Reservation> c = call("c", up, Duration.ofMinutes(2));
    assertThat(c).isNotDone();
    long retry = scheduler.ticker().read();
    scheduler.advanceMillis(39_999);
    assertThat(c).isNotDone();
    assertThat(attempts).isEqualTo(3);

    scheduler.advanceMillis(1); // a's call leaves the window: 60 s after it came

    assertThat(c.join().decision().allowed()).isTrue();
    assertThat(attempts).isEqualTo(4);
    assertThat(scheduler.ticker().read() - retry).isEqualTo(Duration.ofSeconds(40).toNanos());
  }

  @Test
  void aReleasedSlotAdmitsTheFirstWaitingCallAtOnce() {
    Upstream up = new Upstream("azure", null, null, ConcurrencyLimit.of(1));
    Reservation first = call("a", up, Duration.ofSeconds(30)).join();
    CompletableFuture<Reservation> b = call("b", up, Duration.ofSeconds(30));
    CompletableFuture<Reservation> c = call("c", up, Duration.ofSeconds(30));
    assertThat(b).isNotDone();

    store.release(first);
    room.capacityMayHaveFreed(up.name());

    assertThat(b.join().decision().allowed()).isTrue();
    assertThat(c).isNotDone();
    store.release(b.join());
    room.capacityMayHaveFreed(up.name());
    assertThat(c.join().decision().allowed()).isTrue();
    // a once; b at arrival and after a's release; c (queued behind b, not tried at arrival) right
    // after b was admitted, and after b's release
    assertThat(attempts).isEqualTo(5);
  }

  @Test
  void aSettlementThatFreesModelTokensAdmitsTheNextCall() {
    Upstream up = new Upstream("tokens", null, ModelTokenLimit.perMinute(150), null);
    Reservation first = call("a", up, Duration.ofSeconds(30)).join();
    CompletableFuture<Reservation> b = call("b", up, Duration.ofSeconds(30));
    assertThat(b).isNotDone();

    store.reconcile(first, Consumption.ofCall(20, 0));
    room.settled(up.name(), "a", 1, 100, 20);
    room.capacityMayHaveFreed(up.name());

    assertThat(b.join().decision().allowed()).isTrue();
    assertThat(room.counter(up.name(), "a")).isEqualTo(20.0);
  }

  @Test
  void aProvidersRetryClosesTheUpstreamAndTheWaitingCallPassesWhenItLapses() {
    Upstream up = new Upstream("closed", WindowLimit.perMinute(100), null, null);
    store.report(up, new ProviderReport(null, null, null, null, null, null,
        Duration.ofSeconds(12)));
    CompletableFuture<Reservation> a = call("a", up, Duration.ofSeconds(30));
    assertThat(a).isNotDone();
    assertThat(a.getNow(null)).isNull();

    scheduler.advanceMillis(11_999);
    assertThat(a).isNotDone();
    scheduler.advanceMillis(1);

    assertThat(a.join().decision().allowed()).isTrue();
    assertThat(attempts).isEqualTo(2);
  }

  @Test
  void aCallWhoseWaitPassesGetsTheUpstreamsDenyAndChargesNothing() {
    Upstream up = new Upstream("full", WindowLimit.perMinute(1), null, null);
    call("a", up, Duration.ofSeconds(5)).join();
    CompletableFuture<Reservation> b = call("b", up, Duration.ofSeconds(5));

    scheduler.advanceMillis(5_000);

    Decision d = b.join().decision();
    assertThat(d.reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(60_000); // as denied at arrival
    assertThat(store.reserve(List.of(tenantBudget), List.of("b"), 1, Consumption.ofCall(1, 0),
        Composition.SEQUENTIAL).decision().remaining()).isEqualTo(999); // b's own budget untouched
    assertThat(abandoned).isEmpty();
  }
}
