package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The store test suite for model-token budgets (TPM): reserve an estimate before the call,
 * reconcile with the actual usage after it. Every store that supports {@link
 * RateLimitStore#reserve} must pass it unchanged.
 */
public abstract class AbstractModelTokenStoreTests extends StoreTckSupport {

  private static Budget tpm(String name, long limit) {
    return new Budget(name, null, null, new ModelTokenLimit(limit, Duration.ofMinutes(1)));
  }

  private long used(Budget b, String key) {
    return admin().inspect(b, key).map(KeySnapshot::modelTokensUsed).orElse(0L);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void estimatesAreReservedUntilTheLimit(Composition mode) {
    Budget b = tpm("tpm", 1000);
    Reservation first = reserve(b, "t", 600, mode);
    assertThat(first.decision().allowed()).isTrue();
    assertThat(first.reserved()).isTrue();
    assertThat(first.remainingModelTokens()).isEqualTo(400);
    assertThat(first.modelTokensResetMs()).isEqualTo(60_000);
    ticker.advanceMillis(10_000);
    assertThat(reserve(b, "t", 400, mode).remainingModelTokens()).isZero();
    Reservation denied = reserve(b, "t", 1, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(denied.reserved()).isFalse();
    assertThat(denied.decision().retryAfterMs()).isEqualTo(50_000); // the 600 leave at t0 + 60 s
    assertThat(used(b, "t")).isEqualTo(1000);
  }

  @Test
  void theRetryWaitsUntilEnoughTokensLeaveNotJustTheOldest() {
    Budget b = tpm("tpm", 1000);
    reserve(b, "t", 100, Composition.SEQUENTIAL); // t0
    ticker.advanceMillis(1000);
    reserve(b, "t", 100, Composition.SEQUENTIAL); // t0 + 1 s
    ticker.advanceMillis(1000);
    reserve(b, "t", 800, Composition.SEQUENTIAL); // t0 + 2 s
    Decision d = reserve(b, "t", 150, Composition.SEQUENTIAL).decision();
    assertThat(d.reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(59_000); // needs both 100s gone: t0 + 61 s - (t0 + 2 s)
    ticker.advanceMillis(58_999);
    assertThat(reserve(b, "t", 150, Composition.SEQUENTIAL).decision().allowed()).isFalse();
    ticker.advanceMillis(1);
    assertThat(reserve(b, "t", 150, Composition.SEQUENTIAL).decision().allowed()).isTrue();
  }

  @Test
  void anEstimateAboveTheLimitNeverFitsAndChargesNothing() {
    Budget b = new Budget("gw", WindowLimit.perMinute(10), null, ModelTokenLimit.perMinute(100));
    Reservation r = reserve(b, "t", 101, Composition.SEQUENTIAL);
    assertThat(r.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(r.decision().retryable()).isFalse();
    assertThat(admin().inspect(b, "t").map(KeySnapshot::windowUsed).orElse(0L)).isZero();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void asyncReservationsAndReconciliationsActLikeSyncOnes(Composition mode) {
    Budget b = tpm("tpm-async", 1000);
    Reservation first = store.reserveAsync(List.of(b), List.of("t"), 1, 600, mode)
        .toCompletableFuture().join();
    assertThat(first.decision().allowed()).isTrue();
    assertThat(first.remainingModelTokens()).isEqualTo(400);
    assertThat(store.reserveAsync(List.of(b), List.of("t"), 1, 500, mode).toCompletableFuture()
        .join().decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    store.reconcileAsync(first, 100).toCompletableFuture().join();
    assertThat(used(b, "t")).isEqualTo(100);
    assertThat(store.reserveAsync(List.of(b), List.of("t"), 1, 500, mode).toCompletableFuture()
        .join().decision().allowed()).isTrue();
    assertThat(used(b, "t")).isEqualTo(600);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void reconcilingDownRefundsAndUpChargesInTheSameEntry(Composition mode) {
    Budget b = tpm("tpm", 1000);
    Reservation r = reserve(b, "t", 800, mode);
    ticker.advanceMillis(5_000);
    store.reconcile(r, 300);
    assertThat(used(b, "t")).isEqualTo(300);
    Reservation r2 = reserve(b, "t", 700, mode);
    assertThat(r2.decision().allowed()).isTrue();
    store.reconcile(r2, 900); // under-estimated by 200: the window now holds 1200
    assertThat(used(b, "t")).isEqualTo(1200);
    Reservation denied = reserve(b, "t", 1, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    // the reconciled entries keep their times (t0 and t0 + 5 s): the 300 leaving at t0 + 60 s
    // frees enough, 55 s from now
    assertThat(denied.decision().retryAfterMs()).isEqualTo(55_000);
    ticker.advanceMillis(55_000); // t0 + 60 s: the 300 left, 900 remain
    assertThat(used(b, "t")).isEqualTo(900);
  }

  @Test
  void aFailedCallRefundsItsEstimateButKeepsItsRequestSlot() {
    Budget b = new Budget("gw", new WindowLimit(2, Duration.ofMinutes(1)), null,
        ModelTokenLimit.perMinute(1000));
    Reservation r = reserve(b, "t", 1000, Composition.SEQUENTIAL);
    store.reconcile(r, 0);
    KeySnapshot s = admin().inspect(b, "t").orElseThrow();
    assertThat(s.modelTokensUsed()).isZero();
    assertThat(s.windowUsed()).isEqualTo(1);
  }

  @Test
  void anUnderEstimateReconciledAfterTheEntryLeftIsChargedNow() {
    Budget b = tpm("tpm", 1000);
    Reservation r = reserve(b, "t", 100, Composition.SEQUENTIAL);
    ticker.advance(Duration.ofMinutes(2)); // a very long stream
    store.reconcile(r, 400);
    assertThat(used(b, "t")).isEqualTo(300);
    Reservation over = reserve(b, "t", 500, Composition.SEQUENTIAL);
    ticker.advance(Duration.ofMinutes(2));
    store.reconcile(over, 10); // nothing left to refund
    assertThat(used(b, "t")).isZero();
  }

  @Test
  void sequentialTpmDenyKeepsTheRequestAndBurstCharges() {
    Budget b = new Budget("gw", WindowLimit.perMinute(10), new BucketLimit(5, 0),
        ModelTokenLimit.perMinute(100));
    reserve(b, "t", 100, Composition.SEQUENTIAL);
    Reservation denied = reserve(b, "t", 50, Composition.SEQUENTIAL);
    assertThat(denied.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    KeySnapshot s = admin().inspect(b, "t").orElseThrow();
    assertThat(s.windowUsed()).isEqualTo(2);
    assertThat(s.tokens()).isEqualTo(3.0);
    assertThat(s.modelTokensUsed()).isEqualTo(100);
  }

  @Test
  void reserveCommitTpmDenyChargesNothing() {
    Budget b = new Budget("gw", WindowLimit.perMinute(10), new BucketLimit(5, 0),
        ModelTokenLimit.perMinute(100));
    reserve(b, "t", 100, Composition.RESERVE_COMMIT);
    assertThat(reserve(b, "t", 50, Composition.RESERVE_COMMIT).decision().reason())
        .isEqualTo(Reason.TPM_LIMIT);
    KeySnapshot s = admin().inspect(b, "t").orElseThrow();
    assertThat(s.windowUsed()).isEqualTo(1);
    assertThat(s.tokens()).isEqualTo(4.0);
    assertThat(s.modelTokensUsed()).isEqualTo(100);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aDenyAdvisesTheWaitThatBindsOverTheWindowAndTheModelTokens(Composition mode) {
    Budget b = new Budget("gw", new WindowLimit(1, Duration.ofSeconds(1)), null,
        ModelTokenLimit.perMinute(100));
    assertThat(reserve(b, "t", 100, mode).decision().allowed()).isTrue();
    Decision d = reserve(b, "t", 50, mode).decision();
    if (mode == Composition.SEQUENTIAL) {
      assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT); // the window runs first
      assertThat(d.retryAfterMs()).isEqualTo(1000);
      return;
    }
    assertThat(d.reason()).isEqualTo(Reason.TPM_LIMIT); // the 100 tokens leave after 60 s
    assertThat(d.retryAfterMs()).isEqualTo(60_000);
    ticker.advanceMillis(59_999);
    assertThat(reserve(b, "t", 50, mode).decision().allowed()).isFalse();
    ticker.advanceMillis(1);
    assertThat(reserve(b, "t", 50, mode).decision().allowed()).isTrue();
  }

  @Test
  void reserveCommitReportsABucketThatNeverRefillsOverModelTokensThatWillLeave() {
    Budget org = tpm("org", 100);
    Budget key = new Budget("key", null, new BucketLimit(1, 0));
    List<Budget> levels = List.of(org, key);
    List<String> keys = List.of("acme", "k");
    assertThat(store.reserve(levels, keys, 0.5, 100, Composition.RESERVE_COMMIT)
        .decision().allowed()).isTrue();
    Decision d = store.reserve(levels, keys, 1, 50, Composition.RESERVE_COMMIT).decision();
    // the org's tokens leave in 60 s; the key's bucket never holds 1 again
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(d.level()).isEqualTo("key");
    assertThat(d.retryable()).isFalse();
    assertThat(d.retryAfterMs()).isZero();
  }

  @Test
  void aSequentialModelTokenDenyReportsTheRemainingOfEveryLevel() {
    Budget org = tpm("org", 100);
    Budget key = new Budget("key", new WindowLimit(1, Duration.ofMinutes(1)), null);
    List<Budget> levels = List.of(org, key);
    assertThat(store.reserve(levels, List.of("acme", "k"), 1, 100, Composition.SEQUENTIAL)
        .decision().allowed()).isTrue();
    Decision d = store.reserve(levels, List.of("acme", "k"), 1, 10, Composition.SEQUENTIAL)
        .decision();
    assertThat(d.reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(d.level()).isEqualTo("org");
    assertThat(d.remaining()).isZero(); // the key's window, never reached, is full
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aClientThatWaitsTheAdvisedRetryIsAdmittedWithModelTokensToo(Composition mode) {
    assertThat(waitOutAdvisedRetries(mode, 23, true)).as("retries waited out").isGreaterThan(100);
  }

  @Test
  void aPlainAcquireReservesNoModelTokens() {
    Budget b = new Budget("gw", WindowLimit.perMinute(10), null, ModelTokenLimit.perMinute(100));
    reserve(b, "t", 100, Composition.SEQUENTIAL);
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    assertThat(used(b, "t")).isEqualTo(100);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void hierarchyReservesAndReconcilesAtEveryLevelThatLimitsModelTokens(Composition mode) {
    Budget org = tpm("org", 10_000);
    Budget key = new Budget("key", WindowLimit.perMinute(100), null);
    Budget model = tpm("model", 1000);
    List<Budget> levels = List.of(org, key, model);
    Reservation r = store.reserve(levels, List.of("acme", "k1", "k1/gpt-4o"), 1, 900, mode);
    assertThat(r.remainingModelTokens()).isEqualTo(100);
    store.reconcile(r, 250);
    assertThat(used(org, "acme")).isEqualTo(250);
    assertThat(used(model, "k1/gpt-4o")).isEqualTo(250);
    Reservation denied = store.reserve(levels, List.of("acme", "k1", "k1/gpt-4o"), 1, 800, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(denied.decision().level()).isEqualTo("model");
    assertThat(used(org, "acme")).isEqualTo(mode == Composition.SEQUENTIAL ? 1050 : 250);
  }

  @Test
  void reservationsKeepTheirAmountsWhenTheWindowWrapsAndGrows() {
    // Entries leave from the front while new ones arrive, so the window's storage wraps around and
    // then has to grow while wrapped.
    Budget b = new Budget("tpm", null, null, new ModelTokenLimit(1_000_000, Duration.ofSeconds(10)));
    List<Reservation> live = new java.util.ArrayList<>();
    reserve(b, "t", 1000, Composition.SEQUENTIAL);
    reserve(b, "t", 2000, Composition.SEQUENTIAL); // t0: these two leave first
    ticker.advanceMillis(5000);
    for (int i = 1; i <= 2; i++) {
      live.add(reserve(b, "t", i, Composition.SEQUENTIAL)); // t0 + 5 s
    }
    ticker.advanceMillis(5000); // t0 + 10 s: the first two have left
    for (int i = 3; i <= 12; i++) {
      live.add(reserve(b, "t", i, Composition.SEQUENTIAL));
    }
    assertThat(used(b, "t")).isEqualTo(78); // 1 + 2 + ... + 12
    for (int i = 0; i < live.size(); i++) {
      store.reconcile(live.get(i), 100 + i); // each entry keeps its own identity
    }
    assertThat(used(b, "t")).isEqualTo(12 * 100 + 66);
    ticker.advanceMillis(5000); // t0 + 15 s: the two from t0 + 5 s leave
    assertThat(used(b, "t")).isEqualTo(12 * 100 + 66 - 100 - 101);
  }

  @Test
  void topRanksKeysByTheirModelTokenUse() {
    Budget b = tpm("tpm", 1000);
    reserve(b, "light", 100, Composition.SEQUENTIAL);
    reserve(b, "heavy", 900, Composition.SEQUENTIAL);
    reserve(b, "middle", 500, Composition.SEQUENTIAL);
    assertThat(admin().top(b, 3)).extracting(KeySnapshot::modelTokensUsed)
        .containsExactly(900L, 500L, 100L);
  }

  @Test
  void badEstimatesAndUsagesAreRejected() {
    Budget b = tpm("tpm", 1000);
    assertThatIllegalArgumentException().isThrownBy(() -> reserve(b, "t", -1, Composition.SEQUENTIAL))
        .withMessage("estimatedModelTokens must be >= 0, but was -1");
    Reservation r = reserve(b, "t", 1, Composition.SEQUENTIAL);
    assertThatIllegalArgumentException().isThrownBy(() -> store.reconcile(r, -5))
        .withMessage("actualModelTokens must be >= 0, but was -5");
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void concurrentCallsOfOneTenantOvershootOnlyByTheirUnderEstimates(Composition mode)
      throws Exception {
    // The bound: within one window, the actual model tokens admitted are at most the limit plus
    // the sum of max(0, actual - estimate) over the admitted calls. Time stands still here, so
    // the whole run is one window.
    Budget b = new Budget("gw", null, null, new ModelTokenLimit(50_000, Duration.ofMinutes(1)));
    List<long[]> admitted = runConcurrently(6, () -> {
      long actualSum = 0;
      long underSum = 0;
      ThreadLocalRandom random = ThreadLocalRandom.current();
      for (int i = 0; i < 200; i++) {
        long estimate = 100 + random.nextInt(400);
        Reservation r = reserve(b, "tenant", estimate, mode);
        if (r.decision().allowed()) {
          long actual = random.nextInt(10) == 0 ? estimate + random.nextInt(100) : random.nextLong(estimate + 1);
          store.reconcile(r, actual);
          actualSum += actual;
          underSum += Math.max(0, actual - estimate);
        }
      }
      return new long[] {actualSum, underSum};
    });
    long actual = admitted.stream().mapToLong(a -> a[0]).sum();
    long under = admitted.stream().mapToLong(a -> a[1]).sum();
    assertThat(actual).isLessThanOrEqualTo(50_000 + under);
    assertThat(used(b, "tenant")).isEqualTo(actual);
    assertThat(actual).isGreaterThan(45_000); // the budget was really used up, not starved
  }

  @Test
  void reconcilingADeniedReservationDoesNothing() {
    Budget b = tpm("tpm", 100);
    reserve(b, "t", 100, Composition.SEQUENTIAL);
    Reservation denied = reserve(b, "t", 10, Composition.SEQUENTIAL);
    store.reconcile(denied, 0);
    assertThat(used(b, "t")).isEqualTo(100);
  }

  // ---- model tokens charged after the fact, outside a decided call

  @ParameterizedTest
  @EnumSource(Composition.class)
  void tokensChargedAfterTheFactFillTheWindowWithoutARequestSlotOrPermit(Composition mode) {
    Budget b = new Budget("batch", new WindowLimit(2, Duration.ofMinutes(1)), new BucketLimit(3, 0),
        ModelTokenLimit.perMinute(1000));
    store.chargeModelTokens(List.of(b), List.of("t"), 300);
    KeySnapshot s = admin().inspect(b, "t").orElseThrow();
    assertThat(s.modelTokensUsed()).isEqualTo(300);
    assertThat(s.windowUsed()).as("no request slot").isZero();
    assertThat(s.tokens()).as("no bucket permit").isEqualTo(3.0);
    ticker.advanceMillis(10_000);
    Reservation denied = reserve(b, "t", 800, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(denied.decision().retryAfterMs()).isEqualTo(50_000); // the 300 leave at t0 + 60 s
    assertThat(reserve(b, "t", 700, mode).decision().allowed()).as("700 still fit").isTrue();
    ticker.advanceMillis(50_000);
    assertThat(used(b, "t")).isEqualTo(700);
  }

  @Test
  void aChargeAboveTheLimitIsNeverDeniedAndDeniesLaterCallsUntilItLeaves() {
    Budget b = tpm("tpm", 1000);
    store.chargeModelTokens(List.of(b), List.of("t"), 1500);
    assertThat(used(b, "t")).isEqualTo(1500);
    Decision d = reserve(b, "t", 1, Composition.RESERVE_COMMIT).decision();
    assertThat(d.reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(60_000);
    ticker.advanceMillis(60_000);
    assertThat(reserve(b, "t", 1, Composition.RESERVE_COMMIT).decision().allowed()).isTrue();
  }

  @Test
  void aChargeAddsToEveryLevelThatLimitsModelTokensAndLeavesTheOthersUntracked() {
    Budget perKey = new Budget("per-key", WindowLimit.perMinute(10), null, ModelTokenLimit.perMinute(5000));
    Budget slots = new Budget("slots", null, null, null, ConcurrencyLimit.of(1));
    Budget model = new Budget("per-model", WindowLimit.perMinute(5), null, ModelTokenLimit.perMinute(500));
    List<Budget> levels = List.of(perKey, slots, model);
    List<String> keys = List.of("tenant", "tenant", "tenant|gpt-4o");
    store.chargeModelTokens(levels, keys, 200);
    store.chargeModelTokensAsync(levels, keys, 100).toCompletableFuture().join();
    assertThat(used(perKey, "tenant")).isEqualTo(300);
    assertThat(used(model, "tenant|gpt-4o")).isEqualTo(300);
    assertThat(admin().inspect(slots, "tenant")).as("a level without model tokens is left alone").isEmpty();
    assertThat(admin().inspect(perKey, "tenant").orElseThrow().windowUsed()).isZero();
    Reservation r = store.reserve(levels, keys, 1, 201, Composition.RESERVE_COMMIT);
    assertThat(r.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(r.decision().level()).isEqualTo("per-model");
    Reservation admitted = store.reserve(levels, keys, 1, 200, Composition.RESERVE_COMMIT);
    assertThat(admitted.decision().allowed()).isTrue();
    assertThat(admitted.remainingModelTokens()).isZero();
    store.release(admitted);
  }

  @Test
  void aChargeOfNothingDoesNothingAndBadInputIsRejectedNamingIt() {
    Budget b = tpm("tpm", 1000);
    store.chargeModelTokens(List.of(b), List.of("t"), 0);
    assertThat(admin().inspect(b, "t")).isEmpty();
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.chargeModelTokens(List.of(b), List.of("t"), -1))
        .withMessageContaining("modelTokens").withMessageContaining("-1");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.chargeModelTokens(List.of(b), List.of("t", "u"), 5))
        .withMessageContaining("keys");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.chargeModelTokens(List.of(b), List.of(" "), 5))
        .withMessageContaining("keys[0]");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.chargeModelTokensAsync(List.of(b), List.of("t"), -2))
        .withMessageContaining("modelTokens");
    assertThat(admin().inspect(b, "t")).isEmpty();
  }
}
