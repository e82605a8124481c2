package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The quota TCK: budgets over calendar periods, decided and settled the same way on every store,
 * on a wall clock the test drives (periods in UTC and in Europe/Berlin across both daylight-saving
 * changes, month ends of 28, 29, 30 and 31 days, weeks, hours), several quotas on one level, plan
 * changes mid-period, shadow quotas, thresholds, exact settlement of model tokens and money, and
 * concurrent calls against one quota.
 */
public abstract class AbstractQuotaStoreTests extends StoreTckSupport {

  private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

  /** The wall clock of the store under test, at 2026-01-15T10:00:00Z when a test starts. */
  protected ManualClock clock;

  /**
   * Returns a new store with no state whose windows read {@code ticker} and whose quota periods
   * follow {@code clock}.
   *
   * @param ticker the test's monotonic clock
   * @param clock the test's wall clock
   * @return the store under test
   */
  protected abstract RateLimitStore newStore(ManualTicker ticker, ManualClock clock)
      throws Exception;

  @Override
  protected final RateLimitStore newStore(ManualTicker ticker) throws Exception {
    clock = new ManualClock(Instant.parse("2026-01-15T10:00:00Z"));
    return newStore(ticker, clock);
  }

  private static QuotaLimit quota(String name, QuotaUnit unit, long limit, QuotaPeriod period) {
    return QuotaLimit.of(name, unit, limit, period);
  }

  private static Budget budget(QuotaLimit... quotas) {
    return new Budget("chat", null, null, null, null, List.of(quotas), null);
  }

  /**
   * Returns how the store under test names {@code key} in {@link
   * StoreAdministration#topSpenders}: the key itself, unless the store keeps only a one-way form
   * of keys (a store that hashes secrets); {@code quotas} and {@code reset} take the key itself.
   *
   * @param key a key as passed to the store
   * @return the key as {@code topSpenders} reports it
   */
  protected String topKey(String key) {
    return key;
  }

  private Reservation call(Budget b, String key, Composition mode) {
    return call(b, key, 0, 0, mode);
  }

  private Reservation call(Budget b, String key, long tokens, long spend, Composition mode) {
    return store.reserve(List.of(b), List.of(key), 1, new Consumption(1, tokens, spend), mode);
  }

  private void at(String instant) {
    clock.set(Instant.parse(instant));
  }

  private long used(Budget b, String key, String quota) {
    return admin().quotas(b, key).stream().filter(s -> s.quota().name().equals(quota))
        .findFirst().orElseThrow().used();
  }

  private static QuotaStatus status(Reservation r, String quota) {
    return r.quotas().stream().filter(s -> s.quota().name().equals(quota)).findFirst()
        .orElseThrow();
  }

  private static void assertQuotaDeny(Reservation r, long retryMs) {
    assertThat(r.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(r.decision().retryable()).isTrue();
    assertThat(r.decision().retryAfterMs()).isEqualTo(retryMs);
    assertThat(r.decision().level()).isEqualTo("chat");
    assertThat(r.id()).isZero();
  }

  // ---- periods: calendar boundaries, exactly ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aDailyQuotaDeniesUntilMidnightExactly(Composition mode) {
    Budget b = budget(quota("daily", QuotaUnit.REQUESTS, 3, QuotaPeriod.DAY));
    for (int i = 1; i <= 3; i++) {
      Reservation r = call(b, "k", mode);
      assertThat(r.decision().allowed()).isTrue();
      QuotaStatus s = status(r, "daily");
      assertThat(s.used()).isEqualTo(i);
      assertThat(s.remaining()).isEqualTo(3 - i);
      assertThat(s.periodStartMs()).isEqualTo(Instant.parse("2026-01-15T00:00:00Z").toEpochMilli());
      assertThat(s.periodEndMs()).isEqualTo(Instant.parse("2026-01-16T00:00:00Z").toEpochMilli());
      assertThat(s.exceeded()).isFalse();
    }
    Reservation denied = call(b, "k", mode);
    assertQuotaDeny(denied, Duration.ofHours(14).toMillis());
    assertThat(status(denied, "daily").exceeded()).isTrue();
    assertThat(status(denied, "daily").used()).isEqualTo(3); // the deny charged nothing
    at("2026-01-15T23:59:59.999Z");
    assertQuotaDeny(call(b, "k", mode), 1);
    at("2026-01-16T00:00:00Z");
    Reservation next = call(b, "k", mode);
    assertThat(next.decision().allowed()).isTrue();
    assertThat(status(next, "daily").used()).isEqualTo(1);
    assertThat(used(b, "other", "daily")).isZero(); // per key
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aDayInBerlinHas23HoursInSpringAnd25InAutumn(Composition mode) {
    Budget b = budget(quota("daily", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY).inZone(BERLIN));
    // 2026-03-29, 00:30 in Berlin (+01:00): the day ends at 2026-03-30T00:00+02:00, 22.5 h later
    at("2026-03-28T23:30:00Z");
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    assertQuotaDeny(call(b, "k", mode), Duration.ofMinutes(22 * 60 + 30).toMillis());
    at("2026-03-29T21:59:59.999Z");
    assertQuotaDeny(call(b, "k", mode), 1);
    at("2026-03-29T22:00:00Z");
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    // 2026-10-25, 00:30 in Berlin (+02:00): the day ends at 2026-10-26T00:00+01:00, 24.5 h later
    at("2026-10-24T22:30:00Z");
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    Reservation denied = call(b, "k", mode);
    assertQuotaDeny(denied, Duration.ofMinutes(24 * 60 + 30).toMillis());
    assertThat(status(denied, "daily").periodEndMs() - status(denied, "daily").periodStartMs())
        .isEqualTo(Duration.ofHours(25).toMillis());
    at("2026-10-25T23:00:00Z");
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void theRepeatedHourOfAutumnInBerlinIsTwoHourlyPeriods(Composition mode) {
    Budget b = budget(quota("hourly", QuotaUnit.REQUESTS, 1, QuotaPeriod.HOUR).inZone(BERLIN));
    at("2026-10-25T00:30:00Z"); // 02:30+02:00
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    assertQuotaDeny(call(b, "k", mode), Duration.ofMinutes(30).toMillis());
    at("2026-10-25T01:30:00Z"); // 02:30+01:00: the same local hour, a new period
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    assertQuotaDeny(call(b, "k", mode), Duration.ofMinutes(30).toMillis());
    // spring: 01:30+01:00, then 03:00+02:00 is the next hour (02:00 local does not exist)
    at("2026-03-29T00:30:00Z");
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    assertQuotaDeny(call(b, "k", mode), Duration.ofMinutes(30).toMillis());
    at("2026-03-29T01:00:00Z");
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aMonthEndsOnItsLastDayWhateverItsLength(Composition mode) {
    Budget b = budget(quota("monthly", QuotaUnit.REQUESTS, 1, QuotaPeriod.MONTH));
    String[][] ends = {
        {"2026-01-10T12:00:00Z", "2026-02-01T00:00:00Z"}, // 31 days
        {"2026-02-10T12:00:00Z", "2026-03-01T00:00:00Z"}, // 28 days
        {"2028-02-10T12:00:00Z", "2028-03-01T00:00:00Z"}, // 29 days (a leap year)
        {"2026-04-10T12:00:00Z", "2026-05-01T00:00:00Z"}, // 30 days
        {"2026-12-31T23:00:00Z", "2027-01-01T00:00:00Z"}, // a year's end
    };
    for (String[] end : ends) {
      String key = "k" + end[0]; // a key per month: the next month is spent by the last call
      at(end[0]);
      assertThat(call(b, key, mode).decision().allowed()).as(end[0]).isTrue();
      Instant boundary = Instant.parse(end[1]);
      assertQuotaDeny(call(b, key, mode),
          boundary.toEpochMilli() - Instant.parse(end[0]).toEpochMilli());
      clock.set(boundary.minusMillis(1));
      assertQuotaDeny(call(b, key, mode), 1);
      clock.set(boundary);
      Reservation next = call(b, key, mode);
      assertThat(next.decision().allowed()).as(end[1]).isTrue();
      assertThat(status(next, "monthly").periodStartMs()).isEqualTo(boundary.toEpochMilli());
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aMonthInBerlinEndsAtLocalMidnight(Composition mode) {
    Budget b = budget(quota("monthly", QuotaUnit.REQUESTS, 1, QuotaPeriod.MONTH).inZone(BERLIN));
    at("2026-03-31T21:00:00Z"); // 23:00+02:00 on March 31st
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    assertQuotaDeny(call(b, "k", mode), Duration.ofHours(1).toMillis());
    at("2026-03-31T22:00:00Z"); // April 1st, 00:00+02:00
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aWeekStartsOnMonday(Composition mode) {
    Budget b = budget(quota("weekly", QuotaUnit.REQUESTS, 1, QuotaPeriod.WEEK));
    at("2026-01-12T00:00:00Z"); // a Monday
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    at("2026-01-18T23:00:00Z"); // the Sunday after
    Reservation denied = call(b, "k", mode);
    assertQuotaDeny(denied, Duration.ofHours(1).toMillis());
    assertThat(status(denied, "weekly").periodStartMs())
        .isEqualTo(Instant.parse("2026-01-12T00:00:00Z").toEpochMilli());
    at("2026-01-19T00:00:00Z");
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
  }

  // ---- several quotas, levels and plans ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void severalQuotasOnOneLevelEachBind(Composition mode) {
    Budget b = budget(quota("daily", QuotaUnit.REQUESTS, 2, QuotaPeriod.DAY),
        quota("monthly", QuotaUnit.REQUESTS, 3, QuotaPeriod.MONTH));
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    assertQuotaDeny(call(b, "k", mode), Duration.ofHours(14).toMillis()); // the day binds
    at("2026-01-16T10:00:00Z");
    Reservation third = call(b, "k", mode);
    assertThat(third.decision().allowed()).isTrue();
    assertThat(status(third, "daily").used()).isEqualTo(1);
    assertThat(status(third, "monthly").used()).isEqualTo(3);
    // both deny now (daily 1 of 2 fits, monthly does not): the month's end
    Reservation denied = call(b, "k", mode);
    assertQuotaDeny(denied,
        Instant.parse("2026-02-01T00:00:00Z").toEpochMilli() - clock.millis());
    assertThat(status(denied, "daily").exceeded()).isFalse();
    assertThat(status(denied, "monthly").exceeded()).isTrue();
    assertThat(used(b, "k", "daily")).isEqualTo(1); // nothing charged by the deny
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void eachLevelHasItsOwnQuota(Composition mode) {
    Budget org = new Budget("org", null, null, null, null,
        List.of(quota("daily", QuotaUnit.REQUESTS, 5, QuotaPeriod.DAY)), null);
    Budget key = budget(quota("daily", QuotaUnit.REQUESTS, 3, QuotaPeriod.DAY));
    List<Budget> levels = List.of(org, key);
    Consumption one = new Consumption(1, 0, 0);
    for (int i = 0; i < 3; i++) {
      assertThat(store.reserve(levels, List.of("acme", "k1"), 1, one, mode).decision().allowed())
          .isTrue();
    }
    Reservation byKey = store.reserve(levels, List.of("acme", "k1"), 1, one, mode);
    assertThat(byKey.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(byKey.decision().level()).isEqualTo("chat");
    assertThat(byKey.quotas()).extracting(QuotaStatus::level).containsExactly("org", "chat");
    // sequential: the deny at the second level kept the first level's quota charged
    boolean sequential = mode == Composition.SEQUENTIAL;
    assertThat(used(org, "acme", "daily")).isEqualTo(sequential ? 4 : 3);
    int left = sequential ? 1 : 2;
    for (int i = 0; i < left; i++) {
      assertThat(store.reserve(levels, List.of("acme", "k2"), 1, one, mode).decision().allowed())
          .isTrue();
    }
    Reservation byOrg = store.reserve(levels, List.of("acme", "k2"), 1, one, mode);
    assertThat(byOrg.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(byOrg.decision().level()).isEqualTo("org");
    assertThat(used(org, "acme", "daily")).isEqualTo(5);
    assertThat(used(key, "k2", "daily")).isEqualTo(left);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aPlanChangeMidPeriodResetsNothing(Composition mode) {
    Budget free = budget(quota("daily", QuotaUnit.REQUESTS, 3, QuotaPeriod.DAY));
    Budget pro = free.withQuotas(List.of(quota("daily", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY),
        quota("monthly", QuotaUnit.REQUESTS, 100, QuotaPeriod.MONTH)));
    for (int i = 0; i < 3; i++) {
      assertThat(call(free, "k", mode).decision().allowed()).isTrue();
    }
    assertThat(call(free, "k", mode).decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    for (int i = 4; i <= 10; i++) {
      Reservation r = call(pro, "k", mode);
      assertThat(r.decision().allowed()).as("call %d", i).isTrue();
      assertThat(status(r, "daily").used()).isEqualTo(i);
    }
    assertThat(call(pro, "k", mode).decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(call(free, "k", mode).decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(used(pro, "k", "monthly")).isEqualTo(7); // counted only under the plan that has it
    // the same name over another period is another state
    Budget weekly = free.withQuotas(List.of(quota("daily", QuotaUnit.REQUESTS, 3, QuotaPeriod.WEEK)));
    assertThat(call(weekly, "k", mode).decision().allowed()).isTrue();
  }

  // ---- shadow quotas ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aShadowQuotaNeverDeniesAndCountsAlike(Composition mode) {
    Budget b = budget(quota("daily", QuotaUnit.REQUESTS, 2, QuotaPeriod.DAY).enforced(false)
        .withThresholds(100));
    List<Boolean> exceeded = new ArrayList<>();
    List<List<Integer>> crossed = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Reservation r = call(b, "k", mode);
      assertThat(r.decision().allowed()).isTrue();
      exceeded.add(status(r, "daily").exceeded());
      crossed.add(status(r, "daily").crossed());
    }
    assertThat(exceeded).containsExactly(false, false, true, true, true);
    assertThat(crossed).containsExactly(List.of(), List.of(100), List.of(), List.of(), List.of());
    assertThat(used(b, "k", "daily")).isEqualTo(5);
    // an estimate above a shadow quota's limit is admitted too, and would have been denied
    Budget tokens = new Budget("shadow", null, null, null, null,
        List.of(quota("t", QuotaUnit.TOKENS, 10, QuotaPeriod.DAY).enforced(false)), null);
    Reservation big = call(tokens, "k", 50, 0, mode);
    assertThat(big.decision().allowed()).isTrue();
    assertThat(status(big, "t").exceeded()).isTrue();
  }

  // ---- what a deny charges ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aQuotaDenyChargesTheWindowOnlyInSequentialComposition(Composition mode) {
    Budget b = new Budget("chat", WindowLimit.perMinute(10), null, null, null,
        List.of(quota("daily", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY)), null);
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    Reservation denied = call(b, "k", mode);
    assertQuotaDeny(denied, Duration.ofHours(14).toMillis());
    long windowUsed = admin().inspect(b, "k").orElseThrow().windowUsed();
    assertThat(windowUsed).isEqualTo(mode == Composition.SEQUENTIAL ? 2 : 1);
    assertThat(used(b, "k", "daily")).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void anotherDenyChargesNoQuota(Composition mode) {
    Budget b = new Budget("chat", WindowLimit.perMinute(1), null, null, null,
        List.of(quota("daily", QuotaUnit.REQUESTS, 5, QuotaPeriod.DAY),
            quota("tokens", QuotaUnit.TOKENS, 1000, QuotaPeriod.DAY)), null);
    assertThat(call(b, "k", 100, 0, mode).decision().allowed()).isTrue();
    Reservation denied = call(b, "k", 100, 0, mode);
    assertThat(denied.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(used(b, "k", "daily")).isEqualTo(1);
    assertThat(used(b, "k", "tokens")).isEqualTo(100);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aQuotaWaitBindsOverAShorterWaitInReserveThenCommit(Composition mode) {
    Budget b = new Budget("chat", WindowLimit.perMinute(1), null, null, null,
        List.of(quota("daily", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY)), null);
    assertThat(call(b, "k", mode).decision().allowed()).isTrue();
    Reservation denied = call(b, "k", mode);
    if (mode == Composition.SEQUENTIAL) { // the window denies first
      assertThat(denied.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(denied.decision().retryAfterMs()).isEqualTo(60_000);
    } else { // every component checked: the longest wait binds
      assertQuotaDeny(denied, Duration.ofHours(14).toMillis());
      assertThat(denied.decision().resetAfterMs()).isEqualTo(Duration.ofHours(14).toMillis());
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void anEstimateAboveTheLimitIsRefusedBeforeAnyStateIsRead(Composition mode) {
    Budget b = budget(quota("t", QuotaUnit.TOKENS, 100, QuotaPeriod.DAY));
    Reservation r = call(b, "k", 101, 0, mode);
    assertThat(r.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(r.decision().retryable()).isFalse();
    Reservation huge = call(b, "k", Long.MAX_VALUE, 0, mode); // counted as 2^53: never fits
    assertThat(huge.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(used(b, "k", "t")).isZero();
    assertThat(call(b, "k", 100, 0, mode).decision().allowed()).isTrue();
    // a cost above the whole quota: what it was estimated at, though nothing is reserved
    Budget spend = new Budget("spend", null, null, null, null,
        List.of(quota("c", QuotaUnit.COST, 1_000, QuotaPeriod.DAY)), null);
    Reservation tooDear = call(spend, "k", 10, 1_001, mode);
    assertThat(tooDear.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(tooDear.estimated()).isEqualTo(new Consumption(1, 10, 1_001));
    assertThat(tooDear.id()).isZero();
    assertThat(used(spend, "k", "c")).isZero();
    // the instant whose periods refused it, as an admitted call's reservation tells its own
    assertThat(tooDear.quotaAtMs()).isEqualTo(clock.millis());
  }

  @Test
  void acquireRefusesABudgetWithQuotas() {
    Budget b = budget(quota("daily", QuotaUnit.REQUESTS, 3, QuotaPeriod.DAY));
    assertThatThrownBy(() -> store.acquire(b, "k", 1, Composition.RESERVE_COMMIT))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("quotas")
        .hasMessageContaining("reserve");
  }

  // ---- settlement ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void modelTokensSettleToWhatTheCallUsed(Composition mode) {
    Budget b = budget(quota("t", QuotaUnit.TOKENS, 1000, QuotaPeriod.DAY));
    Reservation first = call(b, "k", 300, 0, mode);
    assertThat(status(first, "t").used()).isEqualTo(300);
    store.reconcile(first, Consumption.ofCall(120, 0));
    assertThat(used(b, "k", "t")).isEqualTo(120);
    assertThat(call(b, "k", 881, 0, mode).decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    Reservation second = call(b, "k", 880, 0, mode);
    assertThat(second.decision().allowed()).isTrue();
    // an under-estimate is charged: the overshoot is the call's excess over its estimate
    store.reconcile(second, Consumption.ofCall(950, 0));
    assertThat(used(b, "k", "t")).isEqualTo(1070);
    assertThat(call(b, "k", 1, 0, mode).decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aFailedCallIsRefundedInEveryUnit(Composition mode) {
    Budget b = budget(quota("r", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY),
        quota("t", QuotaUnit.TOKENS, 1000, QuotaPeriod.DAY),
        quota("c", QuotaUnit.COST, 5_000_000, QuotaPeriod.MONTH));
    Reservation r = call(b, "k", 400, 2_000_000, mode);
    assertThat(r.quotas()).extracting(QuotaStatus::used).containsExactly(1L, 400L, 2_000_000L);
    store.reconcile(r, Consumption.NONE);
    assertThat(admin().quotas(b, "k")).extracting(QuotaStatus::used).containsExactly(0L, 0L, 0L);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aCallSettledAfterTheBoundaryIsSettledInThePeriodItWasChargedIn(Composition mode) {
    Budget b = budget(quota("c", QuotaUnit.COST, 1_000_000, QuotaPeriod.DAY));
    at("2026-01-15T23:59:59Z");
    Reservation r = call(b, "k", 0, 400_000, mode);
    at("2026-01-16T00:00:01Z");
    Reservation today = call(b, "k", 0, 50_000, mode);
    store.reconcile(r, Consumption.ofCall(0, 100_000));
    assertThat(used(b, "k", "c")).isEqualTo(50_000);
    store.reconcile(today, Consumption.ofCall(0, 70_000));
    assertThat(used(b, "k", "c")).isEqualTo(70_000);
    at("2026-01-15T23:59:59.500Z");
    assertThat(used(b, "k", "c")).isEqualTo(100_000);
  }

  @Test
  void theOldReconcileSettlesTokensAndKeepsTheOtherEstimates() {
    Budget b = budget(quota("r", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY),
        quota("t", QuotaUnit.TOKENS, 1000, QuotaPeriod.DAY),
        quota("c", QuotaUnit.COST, 5_000_000, QuotaPeriod.DAY));
    Reservation r = call(b, "k", 400, 2_000, Composition.RESERVE_COMMIT);
    store.reconcile(r, 100);
    assertThat(admin().quotas(b, "k")).extracting(QuotaStatus::used)
        .containsExactly(1L, 100L, 2_000L);
  }

  /**
   * Exact money: 10,000 calls with random estimates and usage, some failing; what the store holds
   * equals the sum of what the calls used, to the micro-unit.
   */
  @ParameterizedTest
  @EnumSource(Composition.class)
  void spendIsExactToTheMicroUnitOver10000Calls(Composition mode) {
    Budget b = budget(quota("c", QuotaUnit.COST, QuotaLimit.MAX_LIMIT, QuotaPeriod.MONTH),
        quota("t", QuotaUnit.TOKENS, QuotaLimit.MAX_LIMIT, QuotaPeriod.MONTH));
    Random random = new Random(22);
    long spent = 0;
    long tokens = 0;
    for (int i = 0; i < 10_000; i++) {
      long estTokens = random.nextInt(20_000);
      long estSpend = random.nextInt(5_000_000);
      Reservation r = call(b, "k" + (i % 3), estTokens, estSpend, mode);
      assertThat(r.decision().allowed()).isTrue();
      if (random.nextInt(10) == 0) {
        store.reconcile(r, Consumption.NONE);
      } else {
        long usedTokens = random.nextInt(30_000);
        long usedSpend = Math.abs(random.nextLong() % 9_999_999_999L);
        store.reconcile(r, Consumption.ofCall(usedTokens, usedSpend));
        spent += usedSpend;
        tokens += usedTokens;
      }
    }
    long stored = 0;
    long storedTokens = 0;
    for (int k = 0; k < 3; k++) {
      stored += used(b, "k" + k, "c");
      storedTokens += used(b, "k" + k, "t");
    }
    assertThat(stored).isEqualTo(spent);
    assertThat(storedTokens).isEqualTo(tokens);
  }

  // ---- thresholds ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void eachThresholdIsReportedOncePerPeriod(Composition mode) {
    Budget b = budget(quota("daily", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY)
        .withThresholds(50, 80, 100));
    List<List<Integer>> crossed = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      crossed.add(status(call(b, "k", mode), "daily").crossed());
    }
    assertThat(crossed).containsExactly(List.of(), List.of(), List.of(), List.of(), List.of(50),
        List.of(), List.of(), List.of(80), List.of(), List.of(100), List.of(), List.of());
    at("2026-01-16T00:00:00Z");
    for (int i = 0; i < 5; i++) {
      crossed.add(status(call(b, "k", mode), "daily").crossed());
    }
    assertThat(crossed.subList(12, 17))
        .containsExactly(List.of(), List.of(), List.of(), List.of(), List.of(50));
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aThresholdASettlementReachedIsReportedByTheNextDecision(Composition mode) {
    Budget b = budget(quota("t", QuotaUnit.TOKENS, 1000, QuotaPeriod.DAY)
        .withThresholds(50, 80, 100));
    Reservation r = call(b, "k", 100, 0, mode);
    assertThat(status(r, "t").crossed()).isEmpty();
    store.reconcile(r, Consumption.ofCall(990, 0));
    Reservation next = call(b, "k", 20, 0, mode); // denied: 990 + 20 > 1000
    assertThat(next.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(status(next, "t").crossed()).containsExactly(50, 80);
    Reservation last = call(b, "k", 10, 0, mode);
    assertThat(last.decision().allowed()).isTrue();
    assertThat(status(last, "t").crossed()).containsExactly(100);
  }

  /**
   * Estimates in flight fill a quota but do not spend it: a call they leave no room for waits 1 s,
   * not until the period's end, and the thresholds count what calls used (with the deciding
   * call's own estimate), so a burst of over-estimated calls raises no false alarm.
   */
  @ParameterizedTest
  @EnumSource(Composition.class)
  void estimatesInFlightDelayACallBrieflyAndRaiseNoThreshold(Composition mode) {
    Budget b = budget(quota("t", QuotaUnit.TOKENS, 1000, QuotaPeriod.DAY)
        .withThresholds(50, 80, 100));
    List<Reservation> inFlight = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Reservation r = call(b, "k", 200, 0, mode);
      assertThat(r.decision().allowed()).isTrue();
      assertThat(status(r, "t").crossed()).isEmpty();
      assertThat(status(r, "t").pending()).isEqualTo(200L * (i + 1));
      inFlight.add(r);
    }
    Reservation waits = call(b, "k", 200, 0, mode);
    assertQuotaDeny(waits, 1_000); // the 5 calls in flight settle when they end
    assertThat(status(waits, "t").used()).isEqualTo(1000);
    assertThat(status(waits, "t").settled()).isZero();
    for (Reservation r : inFlight) {
      store.reconcile(r, Consumption.ofCall(10, 0));
    }
    assertThat(admin().quotas(b, "k").get(0).used()).isEqualTo(50);
    assertThat(admin().quotas(b, "k").get(0).pending()).isZero();
    Reservation next = call(b, "k", 200, 0, mode);
    assertThat(next.decision().allowed()).isTrue();
    assertThat(status(next, "t").crossed()).isEmpty(); // 50 used + its own 200: 25 %
    store.reconcile(next, Consumption.ofCall(450, 0)); // 500 used: 50 %
    Reservation after = call(b, "k", 100, 0, mode);
    assertThat(status(after, "t").crossed()).containsExactly(50); // 500 + its own 100: 60 %
    store.reconcile(after, Consumption.ofCall(100, 0));
    // truly spent: 600 used, an estimate of 500 waits until midnight
    assertQuotaDeny(call(b, "k", 500, 0, mode), Duration.ofHours(14).toMillis());
  }

  // ---- concurrency and administration ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void concurrentCallsNeverPassTheQuota(Composition mode) throws Exception {
    Budget b = budget(quota("daily", QuotaUnit.REQUESTS, 100, QuotaPeriod.DAY)
        .withThresholds(50, 100));
    int threads = 8;
    int perThread = 30;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<int[]>> results = new ArrayList<>();
    try {
      for (int t = 0; t < threads; t++) {
        Callable<int[]> task = () -> {
          start.await();
          int[] counts = new int[2];
          for (int i = 0; i < perThread; i++) {
            Reservation r = call(b, "k", mode);
            counts[0] += r.decision().allowed() ? 1 : 0;
            counts[1] += status(r, "daily").crossed().size();
          }
          return counts;
        };
        results.add(pool.submit(task));
      }
      start.countDown();
      int allowed = 0;
      int crossed = 0;
      for (Future<int[]> f : results) {
        int[] counts = f.get(60, TimeUnit.SECONDS);
        allowed += counts[0];
        crossed += counts[1];
      }
      assertThat(allowed).isEqualTo(100);
      assertThat(crossed).isEqualTo(2);
      assertThat(used(b, "k", "daily")).isEqualTo(100);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void theAdministrationListsQuotasAndTheirTopSpenders() {
    QuotaLimit daily = quota("daily", QuotaUnit.TOKENS, 10_000, QuotaPeriod.DAY);
    Budget b = budget(daily);
    long[] spend = {500, 300, 100};
    for (int k = 0; k < spend.length; k++) {
      call(b, "key-" + k, spend[k], 0, Composition.RESERVE_COMMIT);
    }
    assertThat(admin().topSpenders(b, daily, 2))
        .containsExactly(new QuotaSpend(topKey("key-0"), 500),
            new QuotaSpend(topKey("key-1"), 300));
    List<QuotaStatus> statuses = admin().quotas(b, "key-1");
    assertThat(statuses).hasSize(1);
    assertThat(statuses.get(0).used()).isEqualTo(300);
    assertThat(statuses.get(0).quota()).isEqualTo(daily);
    assertThat(statuses.get(0).periodEndMs())
        .isEqualTo(Instant.parse("2026-01-16T00:00:00Z").toEpochMilli());
    assertThat(admin().quotas(b, "nobody").get(0).used()).isZero();
    admin().reset(b, "key-0");
    assertThat(used(b, "key-0", "daily")).isZero();
    assertThat(admin().topSpenders(b, daily, 5)).extracting(QuotaSpend::key)
        .containsExactly(topKey("key-1"), topKey("key-2"));
    at("2026-01-16T00:00:00Z");
    assertThat(admin().topSpenders(b, daily, 5)).isEmpty(); // a new period
  }

  @Test
  void quotaArgumentsAreChecked() {
    assertThatThrownBy(() -> QuotaLimit.of("daily", QuotaUnit.REQUESTS, 0, QuotaPeriod.DAY))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("limit");
    assertThatThrownBy(() -> QuotaLimit.of("a b", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a b'");
    assertThatThrownBy(() -> quota("d", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY).withThresholds(80, 50))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[80, 50]");
    assertThatThrownBy(() -> quota("d", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY).withThresholds(101))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("101");
    assertThatThrownBy(() -> budget(quota("d", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY),
        quota("d", QuotaUnit.TOKENS, 1, QuotaPeriod.DAY)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("two quotas named 'd'");
    assertThatThrownBy(() -> store.reserve(List.of(budget(quota("d", QuotaUnit.REQUESTS, 1,
        QuotaPeriod.DAY))), List.of("k"), 1, new Consumption(0, 0, 0), Composition.SEQUENTIAL))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 request");
    assertThat(ZoneOffset.UTC).isEqualTo(quota("d", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY).zone());
  }
  // ---- quotas and an upstream ----

  /**
   * An upstream's deny charges no quota, in both compositions, and a quota with too little left
   * denies before a full upstream: the caller's own levels decide first.
   */
  @ParameterizedTest
  @EnumSource(Composition.class)
  void anUpstreamDenyChargesNoQuotaAndAQuotaDenyComesFirst(Composition mode) {
    Budget b = budget(quota("daily", QuotaUnit.REQUESTS, 3, QuotaPeriod.DAY));
    Upstream one = new Upstream("quota-" + mode, WindowLimit.perMinute(1), null, null);
    Consumption call = new Consumption(1, 0, 0);
    String key = "k-upstream";
    Reservation first = store.reserve(List.of(b), List.of(key), 1, call, mode, one);
    assertThat(first.decision().allowed()).isTrue();
    assertThat(status(first, "daily").used()).isEqualTo(1);
    Reservation full = store.reserve(List.of(b), List.of(key), 1, call, mode, one);
    assertThat(full.decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(used(b, key, "daily")).as("the upstream's deny charged no quota").isEqualTo(1);
    assertThat(call(b, key, mode).decision().allowed()).isTrue();
    assertThat(call(b, key, mode).decision().allowed())
        .as("the quota's third call: the upstream's deny took none").isTrue();
    assertQuotaDeny(store.reserve(List.of(b), List.of(key), 1, call, mode, one),
        Instant.parse("2026-01-16T00:00:00Z").toEpochMilli() - clock.millis());
  }
}
