package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The store test suite for what a reservation tells of each component of every level ({@link
 * Reservation#components()}): the window, the bucket, the slots and the model tokens each on its
 * own, after an admission and after a deny by each component, a level a sequential deny never
 * reached as it stands. Every store must report the same figures.
 */
public abstract class AbstractLevelRemainingStoreTests extends StoreTckSupport {

  private static final long NONE = Long.MAX_VALUE;

  /** 3 a minute and a bucket of 2 refilled at 1 a second. */
  private static final Budget ORG = Budget.of("lr-org", WindowLimit.perMinute(3),
      new BucketLimit(2, 1));
  /** 1 call in flight and 100 model tokens a minute. */
  private static final Budget KEY = new Budget("lr-key", null, null,
      new ModelTokenLimit(100, Duration.ofMinutes(1)), ConcurrencyLimit.of(1));

  private static final List<Budget> LEVELS = List.of(ORG, KEY);

  private Reservation reserve(String key, double cost, long estimate, Composition mode) {
    return store.reserve(LEVELS, List.of(key, key + "/k"), cost, estimate, mode);
  }

  private static LevelRemaining org(long window, long windowMs, long bucket, long bucketMs) {
    return new LevelRemaining("lr-org", window, windowMs, bucket, bucketMs, NONE, NONE, 0);
  }

  private static LevelRemaining key(long slots, long tokens, long tokensMs) {
    return new LevelRemaining("lr-key", NONE, 0, NONE, 0, slots, tokens, tokensMs);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void anAdmittedCallCountsItselfInEachComponentApart(Composition mode) {
    Reservation r = reserve("a", 1, 30, mode);
    assertThat(r.decision().allowed()).isTrue();
    assertThat(r.decision().remaining()).as("the smallest: the slot the call holds").isZero();
    assertThat(r.components()).containsExactly(org(2, 60_000, 1, 1_000), key(0, 70, 60_000));
    assertThat(r.components(1)).isEqualTo(key(0, 70, 60_000));

    ticker.advance(Duration.ofMillis(500));
    store.release(r);
    Reservation second = reserve("a", 1, 30, mode);
    // the bucket regained half a token: 0.5 left, full again in 1.5 s
    assertThat(second.components()).containsExactly(
        org(1, 60_000, 0, 1_500), key(0, 40, 60_000));
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aDenyBySlotsReportsNoFreeSlotAndTheOtherComponentsAsTheyStand(Composition mode) {
    reserve("b", 1, 30, mode); // holds the only slot
    Reservation denied = reserve("b", 1, 30, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    // sequential: the org level ran first and stays charged; reserve-then-commit charges nothing
    assertThat(denied.components()).containsExactly(mode == Composition.SEQUENTIAL
        ? org(1, 60_000, 0, 2_000) : org(2, 60_000, 1, 1_000), key(0, 70, 60_000));
  }

  @Test
  void aSequentialDenyLeavesTheLevelsItNeverReachedAsTheyStand() {
    Reservation first = reserve("c", 2, 30, Composition.SEQUENTIAL);
    store.release(first);
    Reservation denied = reserve("c", 1, 30, Composition.SEQUENTIAL);
    assertThat(denied.decision().reason()).isEqualTo(Reason.BURST_LIMIT);
    // the window admitted the call before the bucket denied it; the key level was never reached
    assertThat(denied.components()).containsExactly(org(1, 60_000, 0, 2_000), key(1, 70, 60_000));
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aDenyByTheWindowOrTheModelTokensReportsThatComponentsFigure(Composition mode) {
    Reservation tokens = reserve("d", 1, 80, mode);
    store.release(tokens);
    Reservation tokensShort = reserve("d", 1, 30, mode);
    assertThat(tokensShort.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(tokensShort.components().get(1)).isEqualTo(key(1, 20, 60_000));

    ticker.advance(Duration.ofSeconds(2)); // the bucket full again
    for (int i = 0; i < 3; i++) {
      Reservation r = reserve("e", 1, 0, mode);
      assertThat(r.decision().allowed()).isTrue();
      store.release(r);
      ticker.advance(Duration.ofSeconds(1));
    }
    Reservation window = reserve("e", 1, 0, mode);
    assertThat(window.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
    // the newest of the 3 admissions is 1 s old; the bucket is full
    assertThat(window.components().get(0)).isEqualTo(org(0, 59_000, 2, 0));
  }

  @Test
  void aCallNoStateIsReadForReportsNoComponent() {
    Reservation never = reserve("f", 3, 0, Composition.SEQUENTIAL);
    assertThat(never.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(never.components()).isEmpty();
    assertThat(never.components(0)).isNull();
  }

  @Test
  void aReservationTakesOneFigureRecordPerLevelOrNone() {
    Decision d = Decision.allow(1, 0, "lr-org");
    assertThatIllegalArgumentException().isThrownBy(() -> new Reservation(d, LEVELS,
            List.of("a", "a/k"), 0, 0, 0, 0, 0, 0, List.of(), List.of(org(1, 0, 1, 0))))
        .withMessageContaining("components");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new LevelRemaining("lr-org", -1, 0, 0, 0, 0, 0, 0))
        .withMessageContaining("window");
  }
}
