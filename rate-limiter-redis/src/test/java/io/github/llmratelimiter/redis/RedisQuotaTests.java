package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaSpend;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Instant;
import java.time.InstantSource;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Quotas on a standalone Redis: what two instances sharing it see, and what the store writes. */
class RedisQuotaTests {

  private static final List<String> KEY = List.of("alice");

  private final ManualTicker ticker = new ManualTicker();
  /** A wall clock ahead of the real one (Redis expires counters a day after their period). */
  private final AtomicLong wall = new AtomicLong(Instant.now().truncatedTo(ChronoUnit.DAYS)
      .plus(1, ChronoUnit.DAYS).plus(10, ChronoUnit.HOURS).plusMillis(250).toEpochMilli());
  private final InstantSource clock = () -> Instant.ofEpochMilli(wall.get());
  private final String prefix = TestRedis.freshPrefix();
  private RedisRateLimitStore one;
  private RedisRateLimitStore two;

  @BeforeEach
  void twoInstances() {
    one = TestRedis.standalone(ticker).keyPrefix(prefix).wallClock(clock).build();
    two = TestRedis.standalone(ticker).keyPrefix(prefix).wallClock(clock).build();
  }

  @AfterEach
  void close() {
    one.close();
    two.close();
  }

  private static List<Budget> levels(QuotaLimit... quotas) {
    return List.of(new Budget("chat", null, null, null, null, List.of(quotas), null));
  }

  private static Reservation reserve(RedisRateLimitStore store, List<Budget> levels,
      Consumption estimate) {
    return store.reserve(levels, KEY, 1, estimate, Composition.SEQUENTIAL);
  }

  @Test
  void aThresholdIsReportedExactlyOnceAcrossInstances() {
    List<Budget> levels = levels(
        QuotaLimit.of("calls", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY).withThresholds(50, 100));
    List<List<Integer>> crossed = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      Reservation r = reserve(i % 2 == 0 ? one : two, levels, Consumption.ofCall(0, 0));
      assertThat(r.decision().allowed()).as("call " + i).isEqualTo(i < 10);
      crossed.add(r.quotas().get(0).crossed());
    }
    List<List<Integer>> expected = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      expected.add(i == 4 ? List.of(50) : i == 9 ? List.of(100) : List.of());
    }
    assertThat(crossed).isEqualTo(expected);
  }

  @Test
  void estimatesInFlightDenyBrieflyAndCrossNoThreshold() {
    QuotaLimit spend = QuotaLimit.of("spend", QuotaUnit.COST, 1000, QuotaPeriod.DAY)
        .withThresholds(50);
    List<Budget> levels = levels(spend);
    List<Reservation> inFlight = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Reservation r = reserve(i % 2 == 0 ? one : two, levels, Consumption.ofCall(0, 200));
      assertThat(r.decision().allowed()).as("call " + i).isTrue();
      assertThat(r.quotas().get(0).crossed()).as("call " + i).isEmpty();
      assertThat(r.quotas().get(0).pending()).as("call " + i).isEqualTo(200L * (i + 1));
      inFlight.add(r);
    }
    Reservation sixth = reserve(two, levels, Consumption.ofCall(0, 200));
    assertThat(sixth.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(sixth.decision().retryable()).isTrue();
    assertThat(sixth.decision().retryAfterMs()).isEqualTo(1000);
    assertThat(sixth.quotas().get(0).used()).isEqualTo(1000);
    assertThat(sixth.quotas().get(0).pending()).isEqualTo(1000);
    assertThat(sixth.quotas().get(0).exceeded()).isTrue();
    assertThat(sixth.quotas().get(0).crossed()).isEmpty();
    for (int i = 0; i < 5; i++) {
      (i % 2 == 0 ? two : one).reconcile(inFlight.get(i), Consumption.ofCall(0, 10));
    }
    QuotaStatus settled = one.administration().orElseThrow().quotas(levels.get(0), "alice").get(0);
    assertThat(settled.used()).isEqualTo(50);
    assertThat(settled.pending()).isZero();
    // each next call (estimate 50) settles at 150: the settled use is 200, 350, 500; the fourth
    // call finds 500 settled and its own 50: 55 %
    List<List<Integer>> crossed = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      RedisRateLimitStore store = i % 2 == 0 ? one : two;
      Reservation r = reserve(store, levels, Consumption.ofCall(0, 50));
      assertThat(r.decision().allowed()).as("next call " + i).isTrue();
      assertThat(r.quotas().get(0).used()).as("next call " + i).isEqualTo(50 + 150 * i + 50);
      crossed.add(r.quotas().get(0).crossed());
      store.reconcile(r, Consumption.ofCall(0, 150));
    }
    assertThat(crossed).containsExactly(List.of(), List.of(), List.of(), List.of(50));
    // a quota truly spent (1000 settled) waits for its period's end
    one.reconcile(reserve(one, levels, Consumption.ofCall(0, 100)), Consumption.ofCall(0, 350));
    Reservation spent = reserve(two, levels, Consumption.ofCall(0, 100));
    assertThat(spent.quotas().get(0).used()).isEqualTo(1000);
    assertThat(spent.quotas().get(0).pending()).isZero();
    assertThat(spent.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(spent.decision().retryAfterMs()).isEqualTo(14 * 3_600_000 - 250);
  }

  @Test
  void aQuotaDenyRetriesExactlyAtThePeriodsEnd() {
    List<Budget> levels = levels(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 2, QuotaPeriod.HOUR));
    assertThat(reserve(one, levels, Consumption.ofCall(0, 0)).decision().allowed()).isTrue();
    assertThat(reserve(two, levels, Consumption.ofCall(0, 0)).decision().allowed()).isTrue();
    Reservation denied = reserve(one, levels, Consumption.ofCall(0, 0));
    assertThat(denied.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(denied.decision().retryable()).isTrue();
    assertThat(denied.decision().retryAfterMs()).isEqualTo(3_600_000 - 250);
    assertThat(denied.id()).isZero();
    assertThat(denied.quotas().get(0).exceeded()).isTrue();
    assertThat(denied.quotas().get(0).used()).isEqualTo(2);
    wall.addAndGet(denied.decision().retryAfterMs() - 1);
    assertThat(reserve(two, levels, Consumption.ofCall(0, 0)).decision().allowed()).isFalse();
    wall.addAndGet(1);
    Reservation next = reserve(two, levels, Consumption.ofCall(0, 0));
    assertThat(next.decision().allowed()).isTrue();
    assertThat(next.quotas().get(0).used()).isEqualTo(1);
  }

  @Test
  void concurrentCallsOverTwoInstancesAdmitExactlyTheQuota() throws Exception {
    List<Budget> levels = levels(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 100, QuotaPeriod.DAY));
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Boolean>> calls = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        RedisRateLimitStore store = i % 2 == 0 ? one : two;
        calls.add(pool.submit(() -> {
          start.await();
          return reserve(store, levels, Consumption.ofCall(0, 0)).decision().allowed();
        }));
      }
      start.countDown();
      int admitted = 0;
      for (Future<Boolean> c : calls) {
        admitted += c.get(30, TimeUnit.SECONDS) ? 1 : 0;
      }
      assertThat(admitted).isEqualTo(100);
      QuotaStatus status =
          one.administration().orElseThrow().quotas(levels.get(0), "alice").get(0);
      assertThat(status.used()).isEqualTo(100);
      assertThat(status.pending()).isZero(); // a request is used at once
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void settlementsMoveTheCounterOfThePeriodCharged() {
    List<Budget> levels = levels(
        QuotaLimit.of("tokens", QuotaUnit.TOKENS, 10_000, QuotaPeriod.HOUR),
        QuotaLimit.of("spend", QuotaUnit.COST, 5_000_000, QuotaPeriod.HOUR));
    Reservation a = reserve(one, levels, Consumption.ofCall(1000, 200_000));
    Reservation b = reserve(two, levels, Consumption.ofCall(500, 100_000));
    assertThat(b.quotas().stream().map(QuotaStatus::pending)).containsExactly(1500L, 300_000L);
    assertThat(a.id()).isNotZero();
    assertThat(a.chargedQuotas()).isTrue();
    wall.addAndGet(3_600_000); // the next period: settlements still go to the one charged
    one.reconcile(a, Consumption.ofCall(3000, 50_000));
    two.reconcile(b, Consumption.NONE);
    wall.addAndGet(-3_600_000);
    assertThat(used(one.administration().orElseThrow(), levels.get(0)))
        .containsExactly(3000L, 50_000L);
    assertThat(pending(one.administration().orElseThrow(), levels.get(0)))
        .containsExactly(0L, 0L);
    wall.addAndGet(3_600_000);
    assertThat(used(two.administration().orElseThrow(), levels.get(0)))
        .containsExactly(0L, 0L);
  }

  @Test
  void theOldReconcileKeepsTheEstimatedSpend() {
    List<Budget> levels = levels(
        QuotaLimit.of("calls", QuotaUnit.REQUESTS, 10, QuotaPeriod.HOUR),
        QuotaLimit.of("tokens", QuotaUnit.TOKENS, 10_000, QuotaPeriod.HOUR),
        QuotaLimit.of("spend", QuotaUnit.COST, 5_000_000, QuotaPeriod.HOUR));
    Reservation r = reserve(one, levels, Consumption.ofCall(1000, 200_000));
    one.reconcile(r, 40);
    assertThat(used(one.administration().orElseThrow(), levels.get(0)))
        .containsExactly(1L, 40L, 200_000L);
  }

  @Test
  void aSequentialQuotaDenyKeepsWhatRanBeforeAndReserveCommitChargesNothing() {
    Budget org = new Budget("org", new WindowLimit(100, java.time.Duration.ofMinutes(1)), null,
        null, null, List.of(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 100, QuotaPeriod.DAY)),
        null);
    Budget user = new Budget("user", null, null, null, null,
        List.of(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY)), null);
    List<Budget> levels = List.of(org, user);
    List<String> keys = List.of("org", "alice");
    assertThat(one.reserve(levels, keys, 1, Consumption.ofCall(0, 0), Composition.SEQUENTIAL)
        .decision().allowed()).isTrue();
    Reservation seq = one.reserve(levels, keys, 1, Consumption.ofCall(0, 0),
        Composition.SEQUENTIAL);
    assertThat(seq.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(seq.decision().level()).isEqualTo("user");
    assertThat(seq.quotas().stream().map(QuotaStatus::used)).containsExactly(2L, 1L);
    Reservation rc = one.reserve(levels, keys, 1, Consumption.ofCall(0, 0),
        Composition.RESERVE_COMMIT);
    assertThat(rc.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(rc.quotas().stream().map(QuotaStatus::used)).containsExactly(2L, 1L);
    assertThat(one.administration().orElseThrow().inspect(org, "org").orElseThrow().windowUsed())
        .isEqualTo(2);
  }

  @Test
  void aLateReplyRefundGivesTheQuotasBack() {
    List<Budget> levels = levels(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 5, QuotaPeriod.DAY),
        QuotaLimit.of("spend", QuotaUnit.COST, 1_000_000, QuotaPeriod.DAY));
    LuaRateLimitStore lua = ((GuardedRedisStore) one).lua();
    LuaRateLimitStore.Call call = lua.planReserve(levels, KEY, 1, Consumption.ofCall(0, 300_000),
        Composition.SEQUENTIAL);
    long sent = System.nanoTime();
    AcquireReply reply = lua.replies().await(lua.submit(call, sent + 60_000_000_000L), sent);
    assertThat(used(one.administration().orElseThrow(), levels.get(0)))
        .containsExactly(1L, 300_000L);
    assertThat(pending(one.administration().orElseThrow(), levels.get(0)))
        .containsExactly(0L, 300_000L); // a request is used at once
    assertThat(lua.refund(call, reply).join()).isTrue();
    assertThat(used(one.administration().orElseThrow(), levels.get(0)))
        .containsExactly(0L, 0L);
    assertThat(pending(one.administration().orElseThrow(), levels.get(0)))
        .containsExactly(0L, 0L);
  }

  @Test
  void anAcquireOnQuotasIsRefusedAsInMemory() {
    List<Budget> levels = levels(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 5, QuotaPeriod.DAY));
    assertThatThrownBy(() -> one.acquire(levels, KEY, 1, Composition.SEQUENTIAL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("budget 'chat' has quotas");
    Reservation tooBig = reserve(one, List.of(levels.get(0).withQuotas(
        List.of(QuotaLimit.of("tokens", QuotaUnit.TOKENS, 100, QuotaPeriod.DAY)))),
        Consumption.ofCall(101, 0));
    assertThat(tooBig.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
  }

  @Test
  void topSpendersResetAndNoKeyInClear() {
    QuotaLimit spend = QuotaLimit.of("spend", QuotaUnit.COST, 10_000_000, QuotaPeriod.MONTH);
    List<Budget> levels = levels(spend);
    for (int i = 0; i < 5; i++) {
      one.reserve(levels, List.of("key-" + i), 1, Consumption.ofCall(0, 1000 * (i + 1)),
          Composition.SEQUENTIAL);
    }
    StoreAdministration admin = two.administration().orElseThrow();
    assertThat(admin.topSpenders(levels.get(0), spend, 2)).containsExactly(
        new QuotaSpend(RedisRateLimitStore.hashedKey("key-4"), 5000),
        new QuotaSpend(RedisRateLimitStore.hashedKey("key-3"), 4000));
    assertThat(TestRedis.standaloneCommands().keys(prefix + ":*:q:*")).hasSize(5)
        .noneMatch(k -> k.contains("key-"));
    assertThat(admin.reset(levels.get(0), "key-4")).isTrue();
    assertThat(admin.topSpenders(levels.get(0), spend, 1))
        .containsExactly(new QuotaSpend(RedisRateLimitStore.hashedKey("key-3"), 4000));
    assertThat(admin.quotas(levels.get(0), "key-4").get(0).used()).isZero();
  }

  private static List<Long> used(StoreAdministration admin, Budget budget) {
    return admin.quotas(budget, "alice").stream().map(QuotaStatus::used).toList();
  }

  private static List<Long> pending(StoreAdministration admin, Budget budget) {
    return admin.quotas(budget, "alice").stream().map(QuotaStatus::pending).toList();
  }
}
