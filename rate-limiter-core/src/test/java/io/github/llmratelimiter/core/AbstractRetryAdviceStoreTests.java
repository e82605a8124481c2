package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

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

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aCostNoCapacityCanHoldIsRefusedBeforeAnyStateIsRead(Composition mode) {
    Budget ten = new Budget("cap10", null, new BucketLimit(10, 1));
    Budget two = new Budget("cap2", null, new BucketLimit(2, 1));
    assertThat(store.acquire(ten, "t", 8, mode).remaining()).isEqualTo(2);
    // the bucket holds 2 of 10, and the components would say 2 calls remain, 8 s until full: the
    // refusal reads no state and reports remaining 0 and reset 0, on every store
    List<Decision> refused = List.of(
        store.acquire(ten, "t", 10.5, mode),
        store.acquire(List.of(ten, two), List.of("t", "t/two"), 2.0000000005, mode),
        store.reserve(List.of(ten, two), List.of("t", "t/two"), 2.0000000005, 0, mode).decision());
    for (Decision d : refused) {
      assertThat(d.reason()).as(d.toString()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
      assertThat(d.remaining()).as(d.toString()).isZero();
      assertThat(d.resetAfterMs()).as(d.toString()).isZero();
      assertThat(d.retryAfterMs()).as(d.toString()).isZero();
      assertThat(d.retryable()).as(d.toString()).isFalse();
    }
    assertThat(refused.get(0).level()).isEqualTo("cap10");
    assertThat(refused.get(1).level()).isEqualTo("cap2");
    assertThat(admin().inspect(ten, "t").orElseThrow().tokens()).isEqualTo(2);
    assertThat(store.acquire(ten, "t", 2, mode).allowed()).as("nothing was charged").isTrue();

    // an estimate above the model-token limit, with 60 of 100 tokens in the window
    Budget tpm = new Budget("tpm100", null, null, ModelTokenLimit.perMinute(100));
    assertThat(reserve(tpm, "m", 60, mode).decision().allowed()).isTrue();
    Decision tooMany = reserve(tpm, "m", 101, mode).decision();
    assertThat(tooMany.reason()).as(tooMany.toString()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(tooMany.remaining()).as(tooMany.toString()).isZero();
    assertThat(tooMany.resetAfterMs()).as(tooMany.toString()).isZero();
    assertThat(tooMany.retryable()).as(tooMany.toString()).isFalse();
    assertThat(admin().inspect(tpm, "m").orElseThrow().modelTokensUsed()).isEqualTo(60);
  }

  /**
   * Calls {@code cost} on the twin keys {@code "a"} and {@code "b"}, which have seen the same
   * calls at the same instants, and checks that the advised retry R is the first whole millisecond
   * at which the call passes: at now + R - 1 it is denied on "a", at now + R admitted on "b" (each
   * key called once after the deny, so neither probe changes the other's state). Returns R, or -1
   * when the call passes now (on both keys).
   */
  private long firstPassingMillisecond(Budget b, double cost, Composition mode) {
    Decision a = store.acquire(b, "a", cost, mode);
    Decision twin = store.acquire(b, "b", cost, mode);
    if (a.allowed()) {
      assertThat(twin.allowed()).as(a + " then " + twin).isTrue();
      return -1;
    }
    String what = b + " cost " + cost + " " + mode + ": " + a;
    assertThat(a.reason()).as(what).isEqualTo(Reason.BURST_LIMIT);
    assertThat(twin).as(what).isEqualTo(a);
    long retry = a.retryAfterMs();
    assertThat(retry).as(what).isPositive();
    if (retry > 1) {
      ticker.advanceMillis(retry - 1);
      Decision early = store.acquire(b, "a", cost, mode);
      assertThat(early.allowed()).as(what + " then 1 ms early " + early).isFalse();
      ticker.advanceMillis(1);
    } else {
      ticker.advanceMillis(retry);
    }
    Decision again = store.acquire(b, "b", cost, mode);
    assertThat(again.allowed()).as(what + " then " + again).isTrue();
    return retry;
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aLargeSlowBucketsRetryIsItsFirstPassingMillisecond(Composition mode) {
    // a million tokens regained at 0.001 a second: emptied, a million more pass 999,999,999 s on
    Budget b = new Budget("million-slow", null, new BucketLimit(1_000_000, 0.001));
    assertThat(store.acquire(b, "a", 1_000_000, mode).allowed()).isTrue();
    assertThat(store.acquire(b, "b", 1_000_000, mode).allowed()).isTrue();
    assertThat(firstPassingMillisecond(b, 1_000_000, mode)).isEqualTo(999_999_999_000L);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aNearlyFullLargeBucketsRetryIsItsFirstPassingMillisecond(Composition mode) {
    Budget b = new Budget("million-0.3", null, new BucketLimit(1_000_000, 0.3));
    assertThat(store.acquire(b, "a", 0.7, mode).allowed()).isTrue();
    assertThat(store.acquire(b, "b", 0.7, mode).allowed()).isTrue();
    assertThat(firstPassingMillisecond(b, 999_999.9999999995, mode)).isEqualTo(2_330);
  }

  /**
   * Random buckets of capacities from 1 to 10^9 refilled at 10^-3 to 10 a second, emptied in part
   * or in full, a random time later denied a cost that waits up to 10^4 s: each advised retry is
   * the first whole millisecond at which the call passes ({@link #firstPassingMillisecond}). Every
   * trial's keys are new, and the time waited stays within 2^53 ns of the ticker's origin.
   */
  @ParameterizedTest
  @ValueSource(longs = {31, 32, 33})
  void largeAndSlowBucketsAdviseTheirFirstPassingMillisecond(long draw) {
    Random rnd = new Random(draw);
    int checked = 0;
    for (int trial = 0; trial < 120; trial++) {
      Composition mode = trial % 2 == 0 ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT;
      double capacity = switch (rnd.nextInt(4)) {
        case 0 -> 1e9;
        case 1 -> Math.pow(10, rnd.nextInt(10));
        default -> Math.min(1e9, Math.pow(10, 9 * rnd.nextDouble()));
      };
      double refill = switch (rnd.nextInt(4)) {
        case 0 -> 1e-3;
        case 1 -> new double[] {0.3, 1.0 / 3, 0.7, 0.001 * 7}[rnd.nextInt(4)];
        default -> Math.pow(10, -3 + 4 * rnd.nextDouble());
      };
      double waitSeconds = Math.pow(10, -3 + 7 * rnd.nextDouble());
      double first;
      double cost;
      switch (rnd.nextInt(3)) {
        case 0 -> { // emptied, then a cost it regains within the wait
          first = capacity;
          cost = Math.min(capacity, refill * waitSeconds);
        }
        case 1 -> { // a little spent, then (nearly) all of it
          first = Math.min(capacity, refill * waitSeconds);
          cost = capacity * (1 - rnd.nextInt(8) * 1e-16);
        }
        default -> { // some spent, then more than what is left
          first = capacity * rnd.nextDouble();
          cost = Math.min(capacity, capacity - first + refill * waitSeconds);
        }
      }
      if (!(first > 0 && cost > 0)) {
        continue;
      }
      Budget b = new Budget("slow-" + trial, null, new BucketLimit(capacity, refill));
      if (!store.acquire(b, "a", first, mode).allowed()
          || !store.acquire(b, "b", first, mode).allowed()) {
        continue;
      }
      ticker.advanceNanos(rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(1_000_000_000));
      if (firstPassingMillisecond(b, cost, mode) < 0) {
        continue;
      }
      checked++;
    }
    assertThat(checked).as("retries checked").isGreaterThan(60);
  }
}
