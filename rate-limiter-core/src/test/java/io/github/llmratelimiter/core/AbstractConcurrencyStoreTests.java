package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The store test suite for concurrency budgets (calls in flight): a call reserves a slot, holds it
 * until it is released or its lease expires on the store's clock. Every store that supports
 * {@link RateLimitStore#release} must pass it unchanged.
 *
 * <p>A store shared by several processes (Redis) holds a slot only while the process that took it
 * renews it, every third of a slot lease: the tests of slot leases take slots through a second
 * store, the holder ({@link #newHolder}), renew them ({@link #renewSlots}) as the ticker moves, and
 * crash it ({@link #crash}). A store whose slots live in the holder's own process (the in-memory
 * store) is its own holder and needs no renewal; its slots are held until released or until their
 * lease timeout, and the tests of a crashed holder do not apply to it.
 */
public abstract class AbstractConcurrencyStoreTests extends StoreTckSupport {

  private static final Duration LEASE = ConcurrencyLimit.DEFAULT_LEASE_TIMEOUT;

  private static Budget slots(String name, long limit) {
    return new Budget(name, null, null, null, ConcurrencyLimit.of(limit));
  }

  /** The slot lease of the holders in the tests of slot leases. */
  private static final Duration SLOT_LEASE = Duration.ofSeconds(5);

  /**
   * Returns a second store on the state of the store under test and on its ticker, whose slots are
   * held only while it renews them, for {@code slotLease} after each renewal; {@code null} for a
   * store whose slots are held until released or until their lease timeout, which the tests then
   * use as its own holder.
   *
   * @param slotLease how long a slot counts after it was taken or last renewed
   * @return the holder, or {@code null}
   */
  protected @Nullable RateLimitStore newHolder(Duration slotLease) throws Exception {
    return null;
  }

  /**
   * Renews now the slots the holder's calls in flight hold, as the holder does in the background.
   *
   * @param holder a store from {@link #newHolder}, or the store under test
   */
  protected void renewSlots(RateLimitStore holder) {}

  /**
   * Ends a holder from {@link #newHolder} as a crash does: it releases nothing and renews nothing
   * from then on.
   *
   * @param holder a store from {@link #newHolder}
   */
  protected void crash(RateLimitStore holder) {}

  private long inFlight(Budget b, String key) {
    return admin().inspect(b, key).map(KeySnapshot::inFlight).orElse(0L);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void slotsAreTakenUntilReleased(Composition mode) {
    Budget b = slots("par", 2);
    Reservation first = reserve(b, "t", 0, mode);
    assertThat(first.decision().allowed()).isTrue();
    assertThat(first.holdsSlots()).isTrue();
    assertThat(first.reserved()).as("no model tokens reserved").isFalse();
    assertThat(first.decision().remaining()).isEqualTo(1);
    assertThat(first.decision().resetAfterMs()).as("a slot frees when its call ends").isZero();
    ticker.advanceMillis(1_000);
    Reservation second = reserve(b, "t", 0, mode);
    assertThat(second.decision().allowed()).isTrue();
    assertThat(second.decision().remaining()).isZero();
    ticker.advanceMillis(1_000);
    Reservation denied = reserve(b, "t", 0, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    assertThat(denied.decision().retryable()).isTrue();
    // never "retry now": the earliest lease's expiry, the first's, taken 2 s ago
    assertThat(denied.decision().retryAfterMs()).isEqualTo(LEASE.toMillis() - 2_000);
    assertThat(denied.holdsSlots()).isFalse();
    assertThat(denied.id()).isZero();
    assertThat(inFlight(b, "t")).isEqualTo(2);
    store.release(first);
    assertThat(inFlight(b, "t")).isEqualTo(1);
    Reservation third = reserve(b, "t", 0, mode);
    assertThat(third.decision().allowed()).isTrue();
    assertThat(reserve(b, "other", 0, mode).decision().allowed()).as("keys are independent").isTrue();
    KeySnapshot s = admin().inspect(b, "t").orElseThrow();
    assertThat(s.inFlight()).isEqualTo(2);
    assertThat(s.concurrencyLimit()).isEqualTo(2);
    assertThat(s.utilization()).isEqualTo(1.0);
    assertThat(s.nextFreeMs()).isEqualTo(LEASE.toMillis() - 1_000); // the second's lease
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aReleaseGivesBackExactlyOneSlotHoweverOftenItIsCalled(Composition mode) {
    Budget b = slots("par", 2);
    Reservation a = reserve(b, "t", 0, mode);
    Reservation c = reserve(b, "t", 0, mode);
    store.release(a);
    store.release(a);
    store.releaseAsync(a).toCompletableFuture().join();
    assertThat(inFlight(b, "t")).isEqualTo(1); // c's slot was not given back by a's releases
    assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
    assertThat(reserve(b, "t", 0, mode).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    store.release(c);
    assertThat(inFlight(b, "t")).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aReleaseOfADenyAnExpiredLeaseOrAnotherBudgetFreesNothing(Composition mode) {
    Budget b = new Budget("par", null, null, null, new ConcurrencyLimit(1, Duration.ofSeconds(30)));
    Reservation expired = reserve(b, "t", 0, mode);
    Reservation denied = reserve(b, "t", 0, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    store.release(denied); // holds nothing: the expired-to-be lease stays
    assertThat(inFlight(b, "t")).isEqualTo(1);
    ticker.advance(Duration.ofSeconds(30));
    Reservation live = reserve(b, "t", 0, mode);
    assertThat(live.decision().allowed()).isTrue();
    store.release(expired); // its lease has expired: the live one stays
    assertThat(reserve(b, "t", 0, mode).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    Budget window = new Budget("rpm", WindowLimit.perMinute(5), null);
    Reservation plain = store.reserve(List.of(window), List.of("t"), 1, 0, mode);
    assertThat(plain.holdsSlots()).isFalse();
    store.release(plain);
    assertThat(inFlight(b, "t")).isEqualTo(1);
    assertThatIllegalArgumentException().isThrownBy(() -> store.release(null))
        .withMessageContaining("reservation");
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aLeaseNeverReleasedExpiresOnTheStoresClock(Composition mode) {
    // an instance took the slot and died: no release ever comes
    Budget b = new Budget("par", null, null, null, new ConcurrencyLimit(1, Duration.ofSeconds(30)));
    assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
    ticker.advanceMillis(10_000);
    Decision denied = reserve(b, "t", 0, mode).decision();
    assertThat(denied.reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    assertThat(denied.retryAfterMs()).isEqualTo(20_000);
    ticker.advanceMillis(19_999);
    Decision edge = reserve(b, "t", 0, mode).decision();
    assertThat(edge.reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    assertThat(edge.retryAfterMs()).isEqualTo(1);
    ticker.advanceMillis(1);
    assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void slotsAreCheckedBeforeTheWindowSoTheirDenyChargesNothingAtTheirLevel(Composition mode) {
    Budget b = new Budget("mix", WindowLimit.perMinute(10), new BucketLimit(10, 1), null,
        ConcurrencyLimit.of(1));
    Reservation held = reserve(b, "t", 0, mode);
    for (int i = 0; i < 3; i++) {
      assertThat(reserve(b, "t", 0, mode).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    }
    KeySnapshot s = admin().inspect(b, "t").orElseThrow();
    assertThat(s.windowUsed()).isEqualTo(1);
    assertThat(s.tokens()).isEqualTo(9.0);
    store.release(held);
    assertThat(reserve(b, "t", 0, mode).decision().remaining()).isZero(); // the slot binds: 1 of 1
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aSlotIsTakenOnlyWhenTheWholeCallIsAdmitted(Composition mode) {
    Budget org = new Budget("org", null, null, null, ConcurrencyLimit.of(5));
    Budget key = new Budget("key", WindowLimit.perMinute(1), null);
    List<Budget> levels = List.of(org, key);
    Reservation first = store.reserve(levels, List.of("acme", "k"), 1, 0, mode);
    assertThat(first.decision().allowed()).isTrue();
    Reservation denied = store.reserve(levels, List.of("acme", "k"), 1, 0, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(denied.decision().level()).isEqualTo("key");
    assertThat(denied.decision().remaining()).isZero();
    assertThat(inFlight(org, "acme")).as("a denied call never runs, so holds no slot").isEqualTo(1);
    store.release(first);
    assertThat(inFlight(org, "acme")).isZero();
  }

  @Test
  void sequentialDeniesOnSlotsAfterTheLevelsBeforeWereCharged() {
    Budget org = new Budget("org", WindowLimit.perMinute(10), null);
    Budget key = new Budget("key", WindowLimit.perMinute(10), null, null, ConcurrencyLimit.of(1));
    List<Budget> levels = List.of(org, key);
    for (Composition mode : Composition.values()) {
      String k = "k-" + mode;
      Reservation held = store.reserve(levels, List.of("acme", k), 1, 0, mode);
      long before = admin().inspect(org, "acme").orElseThrow().windowUsed();
      Decision d = store.reserve(levels, List.of("acme", k), 1, 0, mode).decision();
      assertThat(d.reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
      assertThat(d.level()).isEqualTo("key");
      long charged = mode == Composition.SEQUENTIAL ? 1 : 0; // the org ran first in sequential
      assertThat(admin().inspect(org, "acme").orElseThrow().windowUsed()).isEqualTo(before + charged);
      assertThat(admin().inspect(key, k).orElseThrow().windowUsed()).isEqualTo(1);
      store.release(held);
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aDenyReportsTheSlotsWhenTheyBind(Composition mode) {
    // slots full (their lease: 10 min) and window full (60 s): what each mode reports
    Budget b = new Budget("mix", WindowLimit.perMinute(1), null, null, ConcurrencyLimit.of(1));
    assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
    Decision d = reserve(b, "t", 0, mode).decision();
    // sequential: the slots run first; reserve-then-commit: their wait (10 min) is the longest
    assertThat(d.reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(LEASE.toMillis());
    Budget shortLease = new Budget("mix2", WindowLimit.perMinute(1), null, null,
        new ConcurrencyLimit(1, Duration.ofSeconds(10)));
    assertThat(reserve(shortLease, "t", 0, mode).decision().allowed()).isTrue();
    Decision e = reserve(shortLease, "t", 0, mode).decision();
    if (mode == Composition.SEQUENTIAL) {
      assertThat(e.reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
      assertThat(e.retryAfterMs()).isEqualTo(10_000);
    } else {
      assertThat(e.reason()).isEqualTo(Reason.RPM_LIMIT); // the window's 60 s bind
      assertThat(e.retryAfterMs()).isEqualTo(60_000);
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void slotsAndModelTokensAreReservedTogetherAndSettledApart(Composition mode) {
    Budget b = new Budget("llm", null, null, new ModelTokenLimit(1000, Duration.ofMinutes(1)),
        ConcurrencyLimit.of(2));
    Reservation r = store.reserve(List.of(b), List.of("t"), 1, 600, mode);
    assertThat(r.reserved()).isTrue();
    assertThat(r.holdsSlots()).isTrue();
    Reservation over = store.reserve(List.of(b), List.of("t"), 1, 600, mode);
    assertThat(over.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(inFlight(b, "t")).as("the TPM deny took no slot").isEqualTo(1);
    store.reconcile(r, 100);
    assertThat(inFlight(b, "t")).as("reconciling keeps the slot").isEqualTo(1);
    store.release(r);
    assertThat(inFlight(b, "t")).isZero();
    assertThat(admin().inspect(b, "t").orElseThrow().modelTokensUsed())
        .as("releasing keeps the usage").isEqualTo(100);
  }

  @Test
  void asyncCallsTakeAndGiveBackSlotsLikeSyncOnes() {
    Budget b = slots("par", 1);
    Reservation r = store.reserveAsync(List.of(b), List.of("t"), 1, 0, Composition.SEQUENTIAL)
        .toCompletableFuture().join();
    assertThat(r.decision().allowed()).isTrue();
    assertThat(reserve(b, "t", 0, Composition.SEQUENTIAL).decision().reason())
        .isEqualTo(Reason.CONCURRENCY_LIMIT);
    store.releaseAsync(r).toCompletableFuture().join();
    assertThat(reserve(b, "t", 0, Composition.SEQUENTIAL).decision().allowed()).isTrue();
  }

  @Test
  void theLimitersReserveAndRelease() {
    GatewayLimiter limiter = GatewayLimiter.builder().name("gw-par").requestsPerMinute(100)
        .concurrency(1, Duration.ofSeconds(5)).store(store).build();
    Reservation r = limiter.reserve("t", 1, 0);
    assertThat(r.decision().allowed()).isTrue();
    assertThat(limiter.reserve("t", 1, 0).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    limiter.release(r);
    assertThat(limiter.reserve("t", 1, 0).decision().allowed()).isTrue();
    HierarchicalLimiter h = HierarchicalLimiter.builder().level(slots("h-org", 1))
        .level(new Budget("h-key", WindowLimit.perMinute(10), null)).store(store).build();
    Reservation hr = h.reserve(List.of("acme", "k"), 1, 0);
    assertThat(h.reserve(List.of("acme", "j"), 1, 0).decision().reason())
        .isEqualTo(Reason.CONCURRENCY_LIMIT);
    h.release(hr);
    assertThat(h.reserve(List.of("acme", "j"), 1, 0).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void concurrentCallersNeverHoldMoreSlotsThanTheLimit(Composition mode) throws Exception {
    Budget b = slots("hot", 3);
    AtomicInteger running = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    List<int[]> counts = runConcurrently(8, () -> {
      int admitted = 0;
      int denied = 0;
      for (int i = 0; i < 40; i++) {
        Reservation r = reserve(b, "hot", 0, mode);
        if (r.decision().allowed()) {
          admitted++;
          int now = running.incrementAndGet();
          most.accumulateAndGet(now, Math::max);
          for (int y = 0; y < 20; y++) {
            Thread.yield(); // holds the slot a while, so that other callers find it taken
          }
          running.decrementAndGet(); // before the release, so a slot is never counted free early
          store.release(r);
        } else {
          assertThat(r.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
          denied++;
        }
      }
      return new int[] {admitted, denied};
    });
    int admitted = counts.stream().mapToInt(c -> c[0]).sum();
    int denied = counts.stream().mapToInt(c -> c[1]).sum();
    assertThat(admitted + denied).isEqualTo(320);
    assertThat(admitted).isPositive();
    assertThat(most.get()).isBetween(1, 3);
    assertThat(inFlight(b, "hot")).as("every slot taken was given back").isZero();
    List<Reservation> held = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      held.add(reserve(b, "hot", 0, mode));
      assertThat(held.get(i).decision().allowed()).isTrue();
    }
    assertThat(reserve(b, "hot", 0, mode).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void concurrentCallersAdmitExactlyTheLimitWhenNoneReleases(Composition mode) throws Exception {
    Budget b = slots("held", 5);
    List<Reservation> all = runConcurrently(8, () -> {
      List<Reservation> mine = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        mine.add(reserve(b, "hot", 0, mode));
      }
      return mine;
    }).stream().flatMap(List::stream).toList();
    assertThat(all).filteredOn(r -> r.decision().allowed()).hasSize(5);
    assertThat(all).filteredOn(r -> r.decision().reason() == Reason.CONCURRENCY_LIMIT).hasSize(75);
    assertThat(all.stream().filter(Reservation::holdsSlots).map(Reservation::id).distinct())
        .hasSize(5);
    assertThat(inFlight(b, "hot")).isEqualTo(5);
    runConcurrently(8, () -> {
      all.forEach(store::release); // every thread releases every reservation: 8 times each
      return null;
    });
    assertThat(inFlight(b, "hot")).isZero();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aLiveHolderKeepsItsSlotsOverManySlotLeasesAndTheLeaseTimeoutStillCapsThem(Composition mode)
      throws Exception {
    RateLimitStore created = newHolder(SLOT_LEASE);
    RateLimitStore holder = created != null ? created : store;
    try {
      Budget b = new Budget("par", null, null, null, new ConcurrencyLimit(2, Duration.ofMinutes(1)));
      assertThat(holder.reserve(List.of(b), List.of("t"), 1, 0, mode).decision().allowed()).isTrue();
      assertThat(holder.reserve(List.of(b), List.of("t"), 1, 0, mode).decision().allowed()).isTrue();
      for (int i = 1; i <= 19; i++) { // renewed every 3 s: 57 s, over eleven slot leases
        ticker.advanceMillis(3_000);
        renewSlots(holder);
        Decision denied = reserve(b, "t", 0, mode).decision();
        assertThat(denied.reason()).as("after %d s", 3 * i).isEqualTo(Reason.CONCURRENCY_LIMIT);
        // an upper bound that holds even if the holder lives on: the first lease's timeout
        assertThat(denied.retryAfterMs()).as("after %d s", 3 * i).isEqualTo(60_000 - 3_000L * i);
      }
      ticker.advanceMillis(3_000);
      renewSlots(holder); // renews nothing past the lease timeout, the last-resort cap
      assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
      assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
    } finally {
      if (created != null) {
        created.close();
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aReleaseEndsTheRenewalsAndNoRenewalTakesTheSlotAgain(Composition mode) throws Exception {
    RateLimitStore created = newHolder(SLOT_LEASE);
    RateLimitStore holder = created != null ? created : store;
    try {
      Budget b = slots("par", 1);
      Reservation held = holder.reserve(List.of(b), List.of("t"), 1, 0, mode);
      assertThat(held.decision().allowed()).isTrue();
      ticker.advanceMillis(3_000);
      renewSlots(holder);
      holder.release(held);
      renewSlots(holder);
      Reservation next = reserve(b, "t", 0, mode);
      assertThat(next.decision().allowed()).as("the released slot").isTrue();
      renewSlots(holder);
      assertThat(inFlight(b, "t")).isEqualTo(1);
      store.release(next);
      assertThat(inFlight(b, "t")).isZero();
    } finally {
      if (created != null) {
        created.close();
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void theSlotsOfACrashedHolderFreeWithinOneSlotLease(Composition mode) throws Exception {
    RateLimitStore holder = newHolder(SLOT_LEASE);
    Assumptions.assumeTrue(holder != null, "slots live in the holder's process");
    try {
      Budget b = slots("par", 2);
      assertThat(holder.reserve(List.of(b), List.of("t"), 1, 0, mode).decision().allowed()).isTrue();
      assertThat(holder.reserve(List.of(b), List.of("t"), 1, 0, mode).decision().allowed()).isTrue();
      ticker.advanceMillis(4_000);
      renewSlots(holder); // the last renewal: both slots count until 9 s
      crash(holder);
      Decision denied = reserve(b, "t", 0, mode).decision();
      assertThat(denied.reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
      assertThat(denied.retryAfterMs()).as("an upper bound: the lease timeout")
          .isEqualTo(LEASE.toMillis() - 4_000);
      ticker.advanceMillis(SLOT_LEASE.toMillis() - 1);
      assertThat(reserve(b, "t", 0, mode).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
      ticker.advanceMillis(1);
      assertThat(inFlight(b, "t")).isZero();
      assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
      assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
    } finally {
      holder.close();
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aSlotNotRenewedWithinItsSlotLeaseExpiresAndNoRenewalTakesItAgain(Composition mode)
      throws Exception {
    RateLimitStore holder = newHolder(SLOT_LEASE);
    Assumptions.assumeTrue(holder != null, "slots live in the holder's process");
    try {
      Budget b = slots("par", 1);
      assertThat(holder.reserve(List.of(b), List.of("t"), 1, 0, mode).decision().allowed()).isTrue();
      ticker.advance(SLOT_LEASE); // Redis out of reach of the holder for a whole slot lease
      renewSlots(holder);
      assertThat(inFlight(b, "t")).isZero();
      assertThat(reserve(b, "t", 0, mode).decision().allowed()).isTrue();
      renewSlots(holder);
      assertThat(reserve(b, "t", 0, mode).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    } finally {
      holder.close();
    }
  }
}
