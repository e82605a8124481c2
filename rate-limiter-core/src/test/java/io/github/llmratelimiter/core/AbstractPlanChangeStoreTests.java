package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The store test suite for limits that change per key (a tenant's plan): calls made with {@link
 * Budget#variant variants} of one budget decide on the same state, each against its own limits,
 * and a key that moves between them keeps everything it spent. Every store must pass it unchanged.
 */
public abstract class AbstractPlanChangeStoreTests extends StoreTckSupport {

  private static final Duration MINUTE = Duration.ofMinutes(1);

  // ---- window: the entries in the window count against the new limit ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void windowEntriesCountAgainstTheNewLimit(Composition mode) {
    Budget pro = new Budget("chat", WindowLimit.perMinute(600), null);
    Budget free = pro.variant(WindowLimit.perMinute(60), null, null, null);
    for (int i = 0; i < 60; i++) { // t0 .. t0 + 29.5 s
      assertThat(store.acquire(pro, "t", 1, mode).allowed()).isTrue();
      ticker.advanceMillis(500);
    }
    // t0 + 30 s: 60 calls in the window, the key moves from 600 to 60 a minute
    Decision denied = store.acquire(free, "t", 1, mode);
    assertThat(denied.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(denied.level()).isEqualTo("chat");
    assertThat(denied.remaining()).isZero();
    assertThat(denied.retryAfterMs()).isEqualTo(30_000); // until the one at t0 leaves
    // back to 600: nothing was reset, and the deny appended nothing
    Decision back = store.acquire(pro, "t", 1, mode);
    assertThat(back.allowed()).isTrue();
    assertThat(back.remaining()).isEqualTo(600 - 61);
    // 61 in the window against 60: two must leave, the one at t0 and the one at t0 + 0.5 s
    Decision over = store.acquire(free, "t", 1, mode);
    assertThat(over.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(over.remaining()).isZero();
    assertThat(over.retryAfterMs()).isEqualTo(30_500);
    ticker.advanceMillis(30_499);
    assertThat(store.acquire(free, "t", 1, mode).reason()).isEqualTo(Reason.RPM_LIMIT);
    ticker.advanceMillis(1);
    Decision after = store.acquire(free, "t", 1, mode);
    assertThat(after.allowed()).isTrue();
    assertThat(after.remaining()).isZero();
    assertThat(admin().inspect(free, "t").orElseThrow().windowUsed()).isEqualTo(60);
    assertThat(admin().inspect(free, "t").orElseThrow().windowLimit()).isEqualTo(60);
    assertThat(admin().inspect(pro, "t").orElseThrow().windowLimit()).isEqualTo(600);
  }

  // ---- bucket: its level is clamped to the new capacity, and refills at the new rate ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aBucketIsClampedToTheNewCapacityAndRefillsAtTheNewRate(Composition mode) {
    Budget big = new Budget("burst", null, new BucketLimit(10, 1));
    Budget small = big.variant(null, new BucketLimit(5, 0.5), null, null);
    assertThat(store.acquire(big, "t", 2, mode).remaining()).isEqualTo(8);
    // 8 tokens, clamped to 5, then the call's 1
    Decision clamped = store.acquire(small, "t", 1, mode);
    assertThat(clamped.allowed()).isTrue();
    assertThat(clamped.remaining()).isEqualTo(4);
    assertThat(clamped.resetAfterMs()).isEqualTo(2_000); // 1 token at 0.5/s
    assertThat(store.acquire(small, "t", 4, mode).remaining()).isZero();
    Decision empty = store.acquire(small, "t", 1, mode);
    assertThat(empty.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(empty.retryAfterMs()).isEqualTo(2_000);
    // back to the big bucket: still empty (nothing granted back), refilling at 1/s
    Decision back = store.acquire(big, "t", 1, mode);
    assertThat(back.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(back.retryAfterMs()).isEqualTo(1_000);
    // the time since the last refill counts at the rate of the call that refills
    ticker.advanceMillis(2_000);
    Decision slow = store.acquire(small, "t", 1, mode); // 2 s at 0.5/s: 1 token
    assertThat(slow.allowed()).isTrue();
    assertThat(slow.remaining()).isZero();
    ticker.advanceMillis(2_000);
    Decision fast = store.acquire(big, "t", 1, mode); // 2 s at 1/s: 2 tokens
    assertThat(fast.allowed()).isTrue();
    assertThat(fast.remaining()).isEqualTo(1);
    assertThat(admin().inspect(big, "t").orElseThrow().capacity()).isEqualTo(10.0);
    assertThat(admin().inspect(small, "t").orElseThrow().tokens()).isEqualTo(1.0);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aBiggerBucketGrantsNothingThatWasSpent(Composition mode) {
    Budget free = new Budget("burst", WindowLimit.perMinute(100), new BucketLimit(10, 1));
    Budget pro = free.variant(WindowLimit.perMinute(100), new BucketLimit(100, 10), null, null);
    assertThat(store.acquire(free, "t", 8, mode).remaining()).isEqualTo(2);
    Decision upgraded = store.acquire(pro, "t", 1, mode);
    assertThat(upgraded.allowed()).isTrue();
    assertThat(upgraded.remaining()).isEqualTo(1); // 2 tokens, not 100
    assertThat(store.acquire(pro, "t", 2, mode).reason()).isEqualTo(Reason.BURST_LIMIT);
    ticker.advanceMillis(1_000); // 10 tokens a second now
    assertThat(store.acquire(pro, "t", 1, mode).remaining()).isEqualTo(10);
  }

  @Test
  void aBucketThatACallLeftFreshIsFreshUnderAnyLimits() {
    Budget free = new Budget("burst", null, new BucketLimit(2, 1));
    Budget pro = free.variant(null, new BucketLimit(4, 1), null, null);
    store.acquire(free, "touched", 1, Composition.SEQUENTIAL);
    store.acquire(free, "idle", 1, Composition.SEQUENTIAL);
    ticker.advanceMillis(1_000); // both back to 2 of 2: full under free
    // a fresh state reads as untracked, or as full
    admin().inspect(free, "touched").ifPresent(s -> assertThat(s.tokens()).isEqualTo(2.0));
    // the inspection brought "touched" to now under free's limits, which left it fresh: forgotten
    assertThat(store.acquire(pro, "touched", 1, Composition.SEQUENTIAL).remaining()).isEqualTo(3);
    // no call saw "idle" fresh: its level, 1 token a second ago, refills at pro's rate
    assertThat(store.acquire(pro, "idle", 1, Composition.SEQUENTIAL).remaining()).isEqualTo(1);
  }

  @Test
  void aBucketExactlyFullUnderASmallerCapacityIsFreshForTheCallThatLeavesItSo() {
    Budget org = new Budget("org", new WindowLimit(2, Duration.ofMillis(1)), null);
    Budget pro = new Budget("key", null, new BucketLimit(5, 1));
    Budget free = pro.variant(null, new BucketLimit(2, 1), null, null);
    List<String> keys = List.of("acme", "k");
    Composition rc = Composition.RESERVE_COMMIT;
    assertThat(store.acquire(List.of(org, pro), keys, 3, rc).remaining()).isEqualTo(1);
    assertThat(store.acquire(List.of(org), List.of("acme"), 1, rc).allowed()).isTrue();
    // the org's window denies; the key's level, brought to now under free, holds 2 of 2: fresh
    Decision d = store.acquire(List.of(org, free), keys, 1, rc);
    assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(d.level()).isEqualTo("org");
    ticker.advanceMillis(1); // the org's window empties; the key's bucket was forgotten: 5, not 2
    assertThat(store.acquire(List.of(org, pro), keys, 1, rc).remaining()).isEqualTo(1);
    assertThat(admin().inspect(pro, "k").orElseThrow().tokens()).isEqualTo(4.0);
  }

  // ---- model tokens: the entries in the window count against the new limit ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void modelTokenEntriesCountAgainstTheNewLimit(Composition mode) {
    Budget pro = new Budget("tpm", null, null, new ModelTokenLimit(10_000, MINUTE));
    Budget free = pro.variant(null, null, new ModelTokenLimit(5_000, MINUTE), null);
    Reservation big = reserve(pro, "t", 6_000, mode);
    assertThat(big.decision().allowed()).isTrue();
    ticker.advanceMillis(10_000);
    Reservation denied = reserve(free, "t", 1, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(denied.remainingModelTokens()).isZero();
    assertThat(denied.decision().retryAfterMs()).isEqualTo(50_000); // the 6,000 leave at t0 + 60 s
    // a reservation made under one plan is reconciled whatever the plan is now
    store.reconcile(big, 4_000);
    Reservation after = reserve(free, "t", 1_000, mode);
    assertThat(after.decision().allowed()).isTrue();
    assertThat(after.remainingModelTokens()).isZero();
    assertThat(reserve(pro, "t", 1, mode).remainingModelTokens()).isEqualTo(4_999);
  }

  // ---- slots: the slots held count against the new limit ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void slotsHeldCountAgainstTheNewLimit(Composition mode) {
    Budget pro = new Budget("par", null, null, null, new ConcurrencyLimit(4, MINUTE));
    Budget free = pro.variant(null, null, null, new ConcurrencyLimit(2, Duration.ofSeconds(30)));
    List<Reservation> held = new ArrayList<>();
    for (int i = 0; i < 3; i++) { // leases until t0 + 60 s, + 61 s, + 62 s
      held.add(reserve(pro, "t", 0, mode));
      assertThat(held.get(i).decision().allowed()).isTrue();
      ticker.advanceMillis(1_000);
    }
    Decision denied = reserve(free, "t", 0, mode).decision();
    assertThat(denied.reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    assertThat(denied.remaining()).isZero();
    assertThat(denied.retryAfterMs()).isEqualTo(58_000); // two must expire: at t0 + 61 s
    store.release(held.get(0));
    assertThat(reserve(free, "t", 0, mode).decision().reason())
        .isEqualTo(Reason.CONCURRENCY_LIMIT);
    store.release(held.get(1));
    Reservation admitted = reserve(free, "t", 0, mode); // its lease is free's: 30 s
    assertThat(admitted.decision().allowed()).isTrue();
    assertThat(admitted.decision().remaining()).isZero();
    Decision third = reserve(pro, "t", 0, mode).decision();
    assertThat(third.allowed()).isTrue(); // 3 of pro's 4
    assertThat(third.remaining()).isEqualTo(1);
    ticker.advanceMillis(30_000); // the free lease expired, pro's ones hold
    KeySnapshot s = admin().inspect(pro, "t").orElseThrow();
    assertThat(s.inFlight()).isEqualTo(2);
    assertThat(s.concurrencyLimit()).isEqualTo(4);
  }

  // ---- a hierarchy where one level moves ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aLevelOfAHierarchyMovesWithoutTheOthers(Composition mode) {
    Budget org = new Budget("org", WindowLimit.perMinute(100), null);
    Budget keyFree = new Budget("key", WindowLimit.perMinute(2), new BucketLimit(5, 1));
    Budget keyPro = keyFree.variant(WindowLimit.perMinute(10), new BucketLimit(5, 1), null, null);
    List<String> keys = List.of("acme", "k");
    assertThat(store.acquire(List.of(org, keyFree), keys, 1, mode).allowed()).isTrue();
    assertThat(store.acquire(List.of(org, keyFree), keys, 1, mode).allowed()).isTrue();
    Decision denied = store.acquire(List.of(org, keyFree), keys, 1, mode);
    assertThat(denied.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(denied.level()).isEqualTo("key");
    Decision pro = store.acquire(List.of(org, keyPro), keys, 1, mode);
    assertThat(pro.allowed()).isTrue();
    assertThat(pro.remaining()).isEqualTo(2); // the key's bucket: 5 less 3 calls
    long orgCalls = mode == Composition.SEQUENTIAL ? 4 : 3; // a sequential deny charged the org
    assertThat(admin().inspect(org, "acme").orElseThrow().windowUsed()).isEqualTo(orgCalls);
    assertThat(admin().inspect(keyPro, "k").orElseThrow().windowUsed()).isEqualTo(3);
  }

  // ---- which plan a key has ----

  @Test
  void aPlanAssignedToAKeyIsReadBackChangedAndCleared() {
    assertThat(plans().assignedPlan("t")).isEmpty();
    plans().assignPlan("t", "pro");
    plans().assignPlan("u:with{odd}chars", "free");
    assertThat(plans().assignedPlan("t")).contains("pro");
    plans().assignPlan("t", "enterprise");
    assertThat(plans().assignedPlan("t")).contains("enterprise");
    plans().assignPlan("t", null);
    assertThat(plans().assignedPlan("t")).isEmpty();
    assertThat(plans().assignedPlan("u:with{odd}chars")).contains("free");
    plans().assignPlan("nobody", null); // clearing nothing does nothing
    assertThat(plans().assignedPlan("nobody")).isEmpty();
    assertThatIllegalArgumentException().isThrownBy(() -> plans().assignPlan(" ", "pro"))
        .withMessageContaining("key");
    assertThatIllegalArgumentException().isThrownBy(() -> plans().assignPlan("t", " "))
        .withMessageContaining("plan");
    assertThatIllegalArgumentException().isThrownBy(() -> plans().assignedPlan(""))
        .withMessageContaining("key");
  }

  @Test
  void aClientThatWaitsTheAdvisedRetryIsAdmittedWhileTheLimitsStay() {
    // a deny's retry holds for the limits it was given with
    Budget pro = Budget.of("mix", new WindowLimit(6, Duration.ofSeconds(2)), new BucketLimit(4, 2));
    Budget free = pro.variant(new WindowLimit(2, Duration.ofSeconds(2)), new BucketLimit(2, 0.5),
        null, null);
    int waited = 0;
    for (int i = 0; i < 200; i++) {
      Budget b = i % 3 == 0 ? pro : free;
      ticker.advanceMillis(i % 7 * 90);
      Decision d = store.acquire(b, "t", i % 2 == 0 ? 1 : 0.5, Composition.RESERVE_COMMIT);
      if (d.denied()) {
        ticker.advanceMillis(d.retryAfterMs());
        assertThat(store.acquire(b, "t", i % 2 == 0 ? 1 : 0.5, Composition.RESERVE_COMMIT)
            .allowed()).as("call %d after %s", i, d).isTrue();
        waited++;
      }
    }
    assertThat(waited).isGreaterThan(20);
  }
}
