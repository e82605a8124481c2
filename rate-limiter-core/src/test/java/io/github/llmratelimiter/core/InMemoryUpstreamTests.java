package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The in-memory store's upstreams under contention: many tenants on several threads against one
 * upstream, on a frozen clock, with the upstream's table between the tenants' tables in the
 * store's lock order.
 */
class InMemoryUpstreamTests extends StoreTckSupport {

  private static final int THREADS = 8;
  private static final int TENANTS_PER_THREAD = 25;
  private static final int CALLS_PER_THREAD = 200;

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker, InMemoryStore.DEFAULT_MAX_KEYS,
        task -> new CompletableFuture<Void>());
  }

  /** Exactly the upstream's limit is admitted, and only the admitted calls are charged. */
  @Test
  void manyTenantsOnManyThreadsGetExactlyTheUpstreamsLimit() throws Exception {
    Budget org = new Budget("org", WindowLimit.perMinute(100_000), null);
    Upstream u = new Upstream("hot", WindowLimit.perMinute(120), ModelTokenLimit.perMinute(
        1_000_000), null);
    // the tables' lock order: org, the upstream, then the plans
    assertThat(store.reserve(List.of(org), List.of("warm-up"), 1, Consumption.ofCall(0, 0),
        Composition.SEQUENTIAL, u).decision().allowed()).isTrue();
    Budget free = new Budget("free", WindowLimit.perMinute(1_000), new BucketLimit(1_000, 0),
        ModelTokenLimit.perMinute(1_000_000));
    Budget pro = new Budget("pro", WindowLimit.perMinute(5_000), null);
    AtomicInteger threadNumbers = new AtomicInteger();
    List<int[]> admitted = runConcurrently(THREADS, () -> {
      int thread = threadNumbers.getAndIncrement();
      int[] mine = new int[TENANTS_PER_THREAD];
      for (int i = 0; i < CALLS_PER_THREAD; i++) {
        int tenant = i % TENANTS_PER_THREAD;
        boolean onFree = (thread + tenant) % 2 == 0;
        Composition mode = i % 3 == 0 ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT;
        Reservation r = store.reserve(List.of(org, onFree ? free : pro),
            List.of("acme", "t" + thread + "-" + tenant), 1, Consumption.ofCall(10, 0), mode, u);
        if (r.decision().allowed()) {
          mine[tenant]++;
        } else {
          assertThat(r.decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
        }
      }
      int[] withThread = new int[TENANTS_PER_THREAD + 1];
      withThread[0] = thread;
      System.arraycopy(mine, 0, withThread, 1, TENANTS_PER_THREAD);
      return withThread;
    });
    int total = 0;
    long freeTokens = 0;
    for (int[] r : admitted) {
      for (int tenant = 0; tenant < TENANTS_PER_THREAD; tenant++) {
        int count = r[tenant + 1];
        total += count;
        Budget plan = (r[0] + tenant) % 2 == 0 ? free : pro;
        String key = "t" + r[0] + "-" + tenant;
        KeySnapshot s = admin().inspect(plan, key).orElse(null);
        assertThat(s == null ? 0 : s.windowUsed()).as(key).isEqualTo(count);
        if (plan == free && s != null) {
          assertThat(s.tokens()).as(key + "'s bucket").isEqualTo(1_000.0 - count);
          freeTokens += s.modelTokensUsed();
          assertThat(s.modelTokensUsed()).isEqualTo(10L * count);
        }
      }
    }
    assertThat(total).isEqualTo(119); // the warm-up took one
    assertThat(admin().inspect(org, "acme").orElseThrow().windowUsed()).isEqualTo(119);
    UpstreamStatus status = store.upstreamStatus(u);
    assertThat(status.requestsRemaining()).isZero();
    assertThat(status.modelTokensRemaining()).isEqualTo(1_000_000 - 1_190);
    assertThat(freeTokens).isLessThanOrEqualTo(1_190);
  }

  /** Slots taken by racing tenants never exceed the upstream's, and racing releases free them all. */
  @Test
  void racingTenantsNeverHoldMoreThanTheUpstreamsSlots() throws Exception {
    Budget plan = new Budget("plan", WindowLimit.perMinute(10_000), null);
    Upstream u = new Upstream("slots", null, null, ConcurrencyLimit.of(5));
    AtomicInteger threadNumbers = new AtomicInteger();
    List<Reservation> all = runConcurrently(THREADS, () -> {
      int thread = threadNumbers.getAndIncrement();
      List<Reservation> mine = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        mine.add(store.reserve(List.of(plan), List.of("t" + thread + "-" + i % 10), 1,
            Consumption.ofCall(0, 0), Composition.SEQUENTIAL, u));
      }
      return mine;
    }).stream().flatMap(List::stream).toList();
    assertThat(all).filteredOn(r -> r.decision().allowed()).hasSize(5);
    assertThat(all).filteredOn(r -> r.decision().reason() == Reason.UPSTREAM_LIMIT)
        .hasSize(THREADS * 50 - 5);
    assertThat(store.upstreamStatus(u).inFlight()).isEqualTo(5);
    runConcurrently(THREADS, () -> {
      all.forEach(store::release);
      return null;
    });
    assertThat(store.upstreamStatus(u).inFlight()).isZero();
    ticker.advance(Duration.ofSeconds(1));
    assertThat(store.reserve(List.of(plan), List.of("late"), 1, Consumption.ofCall(0, 0),
        Composition.RESERVE_COMMIT, u).decision().allowed()).isTrue();
  }
}
