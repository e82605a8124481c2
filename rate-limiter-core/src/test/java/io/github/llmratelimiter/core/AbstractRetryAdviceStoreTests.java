package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The store test suite for the retry advice, one deny reason at a time, in both compositions: a
 * client that waits exactly the advised {@code retryAfterMs}, with no other traffic, calls again.
 *
 * <p>Reserve-then-commit promises the call is then admitted, for every reason. Sequential promises
 * only that the component that denied admits it: a {@code BURST_LIMIT} or {@code TPM_LIMIT} deny
 * keeps the window slot it took, and an {@code RPM_LIMIT} deny never looked at the bucket, so the
 * retry may be denied by the window or the bucket; these tests pin those cases down as documented.
 * Every store must pass it unchanged.
 */
public abstract class AbstractRetryAdviceStoreTests extends StoreTckSupport {

  /** The set-up: 5 a minute, a bucket of 4 refilled at 0.1 a second. */
  private static final Budget FIVE_A_MINUTE_BURST_FOUR =
      Budget.of("rpm5-burst4", WindowLimit.perMinute(5), new BucketLimit(4, 0.1));

  private Decision acquire(Budget b, Composition mode) {
    return store.acquire(b, "t", 1, mode);
  }

  private Decision waitAdvised(Decision denied) {
    assertThat(denied.denied()).as(denied.toString()).isTrue();
    assertThat(denied.retryable()).as(denied.toString()).isTrue();
    ticker.advanceMillis(denied.retryAfterMs());
    return denied;
  }

  /** Waits the advice of {@code denied}, then checks that {@code call} is admitted. */
  private void admittedAfterAdvice(Decision denied, Supplier<Decision> call) {
    waitAdvised(denied);
    Decision retry = call.get();
    assertThat(retry.allowed()).as(denied + " then " + retry).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aBurstDenyIsClearedByItsWaitInReserveCommitButKeepsItsSlotInSequential(Composition mode) {
    Budget b = FIVE_A_MINUTE_BURST_FOUR;
    for (int i = 0; i < 4; i++) {
      assertThat(acquire(b, mode).allowed()).isTrue();
    }
    Decision burst = acquire(b, mode);
    assertThat(burst.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(burst.retryAfterMs()).isEqualTo(10_000);
    waitAdvised(burst);
    Decision retry = acquire(b, mode);
    if (mode == Composition.RESERVE_COMMIT) {
      assertThat(retry.allowed()).as(retry.toString()).isTrue();
      // the window is full now (5 admitted): its wait binds, and it is honest too
      Decision rpm = acquire(b, mode);
      assertThat(rpm.reason()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(rpm.retryAfterMs()).isEqualTo(50_000);
      admittedAfterAdvice(rpm, () -> acquire(b, mode));
    } else {
      // the burst deny kept its window slot (5 of 5): the advised wait is not enough
      assertThat(retry.reason()).as(retry.toString()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(admin().inspect(b, "t").orElseThrow().windowUsed()).isEqualTo(5);
      admittedAfterAdvice(retry, () -> acquire(b, mode));
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aWindowDenyIsClearedByItsWaitWhenTheBucketHasRoom(Composition mode) {
    Budget b = Budget.of("rpm2", new WindowLimit(2, Duration.ofMinutes(1)), new BucketLimit(10, 1));
    acquire(b, mode);
    ticker.advanceMillis(15_000);
    acquire(b, mode);
    Decision rpm = acquire(b, mode);
    assertThat(rpm.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(rpm.retryAfterMs()).isEqualTo(45_000);
    admittedAfterAdvice(rpm, () -> acquire(b, mode));
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aWindowDenyWithAShortBucketWaitsForBothOnlyInReserveCommit(Composition mode) {
    // 2 a minute, and a bucket of 2 that refills one call in 100 s: both are empty after 2 calls
    Budget b = Budget.of("rpm2-slow", new WindowLimit(2, Duration.ofMinutes(1)), new BucketLimit(2, 0.01));
    acquire(b, mode);
    acquire(b, mode);
    Decision denied = acquire(b, mode);
    if (mode == Composition.RESERVE_COMMIT) {
      assertThat(denied.reason()).isEqualTo(Reason.BURST_LIMIT); // the longer wait binds
      assertThat(denied.retryAfterMs()).isEqualTo(100_000);
      admittedAfterAdvice(denied, () -> acquire(b, mode));
    } else {
      // sequential stops at the full window and advises its wait alone
      assertThat(denied.reason()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(denied.retryAfterMs()).isEqualTo(60_000);
      waitAdvised(denied);
      Decision retry = acquire(b, mode);
      assertThat(retry.reason()).as(retry.toString()).isEqualTo(Reason.BURST_LIMIT);
      assertThat(retry.retryAfterMs()).isEqualTo(40_000);
      // the window then holds only the slot that burst deny kept: room for this one
      admittedAfterAdvice(retry, () -> acquire(b, mode));
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aModelTokenDenyIsClearedByItsWaitInReserveCommitButKeepsItsSlotInSequential(Composition mode) {
    // 2 requests in 2 minutes, 1000 model tokens a minute
    Budget b = new Budget("tpm", new WindowLimit(2, Duration.ofMinutes(2)), null,
        ModelTokenLimit.perMinute(1000));
    assertThat(reserve(b, "t", 900, mode).decision().allowed()).isTrue();
    ticker.advanceMillis(30_000);
    Decision tpm = reserve(b, "t", 200, mode).decision();
    assertThat(tpm.reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(tpm.retryAfterMs()).isEqualTo(30_000);
    waitAdvised(tpm);
    Decision retry = reserve(b, "t", 200, mode).decision();
    if (mode == Composition.RESERVE_COMMIT) {
      assertThat(retry.allowed()).as(retry.toString()).isTrue();
    } else {
      // the model-token deny kept its window slot: 2 in the window, the retry is the third
      assertThat(retry.reason()).as(retry.toString()).isEqualTo(Reason.RPM_LIMIT);
      admittedAfterAdvice(retry, () -> reserve(b, "t", 200, mode).decision());
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aConcurrencyDenyIsClearedByItsWaitWhenNoCallEnds(Composition mode) {
    Budget b = new Budget("slots", WindowLimit.perMinute(100), null, null, ConcurrencyLimit.of(1));
    Reservation held = reserve(b, "t", 0, mode);
    assertThat(held.holdsSlots()).isTrue();
    ticker.advanceMillis(1_000);
    Decision full = reserve(b, "t", 0, mode).decision();
    assertThat(full.reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    assertThat(full.retryAfterMs())
        .isEqualTo(ConcurrencyLimit.DEFAULT_LEASE_TIMEOUT.toMillis() - 1_000);
    waitAdvised(full); // the call in flight never ends: its lease expires
    Reservation retry = reserve(b, "t", 0, mode);
    assertThat(retry.decision().allowed()).as(retry.decision().toString()).isTrue();
    store.release(retry);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aHierarchysDenyIsClearedByItsWaitInReserveCommit(Composition mode) {
    Budget perKey = Budget.of("h-per-key", WindowLimit.perMinute(3), new BucketLimit(3, 0.05));
    Budget model = new Budget("h-model", new WindowLimit(2, Duration.ofSeconds(30)), null,
        ModelTokenLimit.perMinute(500));
    List<Budget> levels = List.of(perKey, model);
    List<String> keys = List.of("t", "t|m");
    int waited = 0;
    for (int call = 0; call < 12; call++) {
      Decision d = store.reserve(levels, keys, 1, 150, mode).decision();
      if (d.allowed()) {
        continue;
      }
      waitAdvised(d);
      waited++;
      Decision retry = store.reserve(levels, keys, 1, 150, mode).decision();
      if (mode == Composition.RESERVE_COMMIT) {
        assertThat(retry.allowed()).as(d + " then " + retry).isTrue();
      } else {
        assertThat(retry.reason() == d.reason() && retry.level().equals(d.level()))
            .as("the component that denied admits: " + d + " then " + retry).isFalse();
      }
    }
    assertThat(waited).isGreaterThanOrEqualTo(3);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aDenyThatWaitingCannotClearAdvisesNoRetry(Composition mode) {
    Budget oneShot = Budget.of("one-shot", WindowLimit.perMinute(10), new BucketLimit(1, 0));
    assertThat(acquire(oneShot, mode).allowed()).isTrue();
    Decision spent = acquire(oneShot, mode);
    Decision tooBig = store.acquire(oneShot, "u", 2, mode);
    for (Decision d : List.of(spent, tooBig)) {
      assertThat(d.retryable()).as(d.toString()).isFalse();
      assertThat(d.retryAfterMs()).isZero();
    }
    assertThat(tooBig.reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    ticker.advance(Duration.ofDays(365));
    assertThat(acquire(oneShot, mode).allowed()).isFalse();
    assertThat(store.acquire(oneShot, "u", 2, mode).allowed()).isFalse();
  }

  @Test
  void theStoresWaitIsTheFirstWholeMillisecondThatPasses() {
    Budget b = FIVE_A_MINUTE_BURST_FOUR;
    for (int i = 0; i < 4; i++) {
      acquire(b, Composition.RESERVE_COMMIT);
    }
    Decision burst = acquire(b, Composition.RESERVE_COMMIT);
    ticker.advanceMillis(burst.retryAfterMs() - 1);
    assertThat(acquire(b, Composition.RESERVE_COMMIT).reason()).isEqualTo(Reason.BURST_LIMIT);
    ticker.advanceMillis(1);
    assertThat(acquire(b, Composition.RESERVE_COMMIT).allowed()).isTrue();
  }
}
