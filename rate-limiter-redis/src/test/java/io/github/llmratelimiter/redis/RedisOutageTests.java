package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Redis stopped, frozen or absent at start-up, on a server of this test's own: a failed call is
 * answered by the policy within the command timeout, the circuit breaker opens only on a failure
 * rate (then the policy answers without waiting on Redis), a call the policy answered is never also
 * charged on Redis when its command runs late, and the store recovers by itself once Redis answers
 * again. The circuit breaker's clock (its retry interval) is a manual ticker; the only real waits
 * are on Redis itself (a frozen server, a reconnection), each bounded.
 */
class RedisOutageTests {

  private static final Duration TIMEOUT = Duration.ofMillis(300);
  private static final Duration MAX_WAIT = Duration.ofMillis(1000);
  private static final Duration RETRY = Duration.ofSeconds(1);
  /** Generous: a failure must be answered within the timeout, plus scheduling slack on busy CI. */
  private static final long ANSWER_BOUND_MS = TIMEOUT.toMillis() + 900;
  private static final Budget TWO_PER_MINUTE = new Budget("rpm", WindowLimit.perMinute(2), null);

  private static RedisServer server;

  private final ManualTicker ticker = new ManualTicker();

  @BeforeAll
  static void startServer() {
    server = RedisServer.start();
  }

  @AfterAll
  static void stopServer() {
    server.close();
  }

  @BeforeEach
  void serverUp() {
    if (!server.running()) {
      server.restart();
    }
  }

  /**
   * A store whose circuit breaker opens once half of its last 4 calls failed (counted from 2
   * calls; the heartbeat the store sends when it starts is the first), and lets 1 probe through
   * after the retry interval; further heartbeats only when a test sends them.
   */
  private RedisRateLimitStore.Builder builder(FailurePolicy policy) {
    return RedisRateLimitStore.builder(server.uri())
        .keyPrefix(TestRedis.freshPrefix())
        .commandTimeout(TIMEOUT)
        .maxWait(MAX_WAIT)
        .retryInterval(RETRY)
        .circuitBreaker(50, 4, 2, 1)
        .heartbeatInterval(Duration.ofHours(1))
        .failurePolicy(policy);
  }

  private RedisRateLimitStore store(FailurePolicy policy) {
    return builder(policy).ticker(ticker).build();
  }

  private Decision acquire(RedisRateLimitStore store, String key) {
    return store.acquire(TWO_PER_MINUTE, key, 1, Composition.SEQUENTIAL);
  }

  @ParameterizedTest
  @EnumSource(FailurePolicy.class)
  void stoppedRedisIsAnsweredByThePolicyThenRecoveredWithoutRestart(FailurePolicy policy) {
    try (RedisRateLimitStore store = store(policy)) {
      assertThat(acquire(store, "t").remaining()).isEqualTo(1);
      assertThat(store.degraded()).isFalse();
      assertThat(store.errorCount()).isZero();

      server.stop();
      long start = System.nanoTime();
      Decision first = acquire(store, "t");
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
          .isLessThan(ANSWER_BOUND_MS);
      assertThat(store.errorCount()).isEqualTo(1);
      assertThat(store.degraded()).as("one failure of three calls: below the rate").isFalse();
      Decision second = acquire(store, "t");
      assertThat(store.errorCount()).isEqualTo(2);
      assertThat(store.degraded()).as("two failures of four calls").isTrue();
      assertThat(store.ping()).isFalse();
      Decision third = acquire(store, "t");
      // the breaker is open: the policy answers without asking Redis
      assertThat(store.errorCount()).isEqualTo(2);
      switch (policy) {
        case FAIL_OPEN -> {
          assertThat(first).isEqualTo(Decision.allow(0, 0, "rpm"));
          assertThat(third).isEqualTo(first);
          assertThatIllegalStateException().isThrownBy(() -> admin(store).inspect(TWO_PER_MINUTE, "t"))
              .withMessageContaining("unavailable").withMessageNotContaining("t\"");
        }
        case FAIL_CLOSED -> {
          assertThat(first.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
          assertThat(first.retryable()).isTrue();
          assertThat(first.level()).isEqualTo("rpm");
          assertThat(first.retryAfterMs()).isEqualTo(RETRY.toMillis());
          assertThat(third).isEqualTo(first);
        }
        case LOCAL_FALLBACK -> {
          // the fallback continues from what this instance admitted through Redis (one call)
          assertThat(first.allowed()).isTrue();
          assertThat(first.remaining()).isZero();
          assertThat(second.reason()).isEqualTo(Reason.RPM_LIMIT);
          assertThat(third.reason()).isEqualTo(Reason.RPM_LIMIT);
          assertThat(admin(store).inspect(TWO_PER_MINUTE, "t").orElseThrow().windowUsed()).isEqualTo(2);
        }
      }

      server.restart(); // empty data set
      awaitRecovery(store);
      Decision after = acquire(store, "after");
      assertThat(after.remaining()).isEqualTo(1);
      assertThat(redisKeyCount("after")).isEqualTo(1);
      assertThat(store.ping()).isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(FailurePolicy.class)
  void slotsAreAnsweredByThePolicyWhileRedisIsOutAndReleasesNeverFail(FailurePolicy policy) {
    Budget two = new Budget("par", null, null, null, ConcurrencyLimit.of(2));
    try (RedisRateLimitStore store = store(policy)) {
      Reservation viaRedis = reserve(store, two);
      assertThat(viaRedis.holdsSlots()).isTrue();
      server.stop();
      Reservation first = reserve(store, two);
      Reservation second = reserve(store, two);
      List<Reservation> stillHeld = new java.util.ArrayList<>();
      switch (policy) {
        case FAIL_OPEN -> {
          // admitted without a slot anywhere: nothing to give back
          assertThat(first.decision().allowed()).isTrue();
          assertThat(second.decision().allowed()).isTrue();
          assertThat(first.holdsSlots()).isFalse();
        }
        case FAIL_CLOSED -> {
          assertThat(first.decision().reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
          assertThat(first.holdsSlots()).isFalse();
        }
        case LOCAL_FALLBACK -> {
          // the share (one live instance: 2 slots) still holds the call admitted through Redis
          assertThat(first.decision().allowed()).isTrue();
          assertThat(first.holdsSlots()).isTrue();
          assertThat(second.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
          store.release(viaRedis); // lost on Redis, given back in the share
          stillHeld.add(reserve(store, two));
          assertThat(stillHeld.get(0).decision().allowed()).isTrue();
          assertThat(reserve(store, two).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
          store.releaseAsync(first).toCompletableFuture().join(); // the fallback's own slot
          stillHeld.add(reserve(store, two));
          assertThat(stillHeld.get(1).decision().allowed()).isTrue();
        }
      }
      store.release(viaRedis);
      store.release(first);
      store.releaseAsync(second).toCompletableFuture().join();
      server.restart(); // empty data set
      awaitRecovery(store);
      if (!stillHeld.isEmpty()) {
        // the two calls the fallback admitted and that still run are written back with their slots
        assertThat(reserve(store, two).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
        stillHeld.forEach(store::release); // and released on Redis too
      }
      Reservation after = reserve(store, two);
      assertThat(after.holdsSlots()).isTrue();
      assertThat(LuaRateLimitStore.fromRedis(after)).isTrue();
      store.release(after);
      assertThat(admin(store).inspect(two, "t")).isEmpty();
    }
  }

  @Test
  void theFallbackMirrorsEachKeysSlotsApartThoughRedisNumbersEachKeysReservationsAlike() {
    Budget one = new Budget("par", null, null, null, ConcurrencyLimit.of(1));
    try (RedisRateLimitStore store = store(FailurePolicy.LOCAL_FALLBACK)) {
      ((GuardedRedisStore) store).heartbeat().join();
      Reservation a = store.reserve(List.of(one), List.of("a"), 1, 0, Composition.SEQUENTIAL);
      Reservation b = store.reserve(List.of(one), List.of("b"), 1, 0, Composition.SEQUENTIAL);
      assertThat(a.holdsSlots()).isTrue();
      assertThat(b.holdsSlots()).isTrue();
      assertThat(a.id()).as("each key's first reservation, numbered per key").isEqualTo(b.id());
      store.release(a); // a's call ends; b's is still in flight
      server.stop();
      assertThat(store.reserve(List.of(one), List.of("b"), 1, 0, Composition.SEQUENTIAL)
          .decision().reason()).as("b's slot is still held in the share")
          .isEqualTo(Reason.CONCURRENCY_LIMIT);
      Reservation again = store.reserve(List.of(one), List.of("a"), 1, 0, Composition.SEQUENTIAL);
      assertThat(again.decision().allowed()).as("a's slot was given back in the share").isTrue();
      store.release(again);
      store.release(b);
      assertThat(store.reserve(List.of(one), List.of("b"), 1, 0, Composition.SEQUENTIAL)
          .decision().allowed()).as("b's slot given back in the share").isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(FailurePolicy.class)
  void aPlanAssignmentIsNeverAnsweredByThePolicy(FailurePolicy policy) {
    try (RedisRateLimitStore store = store(policy)) {
      store.planAssignments().orElseThrow().assignPlan("t", "pro");
      server.stop();
      // unknown is not "unassigned": a resolver keeps the plan it knew
      assertThatIllegalStateException().isThrownBy(() -> store.planAssignments().orElseThrow()
          .assignedPlan("t"))
          .withMessageContaining("unavailable");
      assertThat(store.planAssignments().orElseThrow().assignedPlanAsync("t").toCompletableFuture())
          .failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
          .withCauseInstanceOf(IllegalStateException.class);
      assertThatIllegalStateException().isThrownBy(() -> store.planAssignments().orElseThrow()
          .assignPlan("t", "free"))
          .withMessageContaining("unavailable");
    }
  }

  private static Reservation reserve(RedisRateLimitStore store, Budget budget) {
    return store.reserve(List.of(budget), List.of("t"), 1, 0, Composition.SEQUENTIAL);
  }

  @Test
  void oneFailedCallAmongAnsweredOnesDoesNotOpenTheBreaker() {
    try (RedisRateLimitStore store = builder(FailurePolicy.FAIL_CLOSED)
        .circuitBreaker(50, 20, 10, 3).ticker(ticker).build()) {
      for (int i = 0; i < 5; i++) {
        assertThat(acquire(store, "k" + i).allowed()).isTrue();
      }
      server.freeze();
      Decision failed;
      try {
        failed = acquire(store, "slow");
      } finally {
        server.thaw();
      }
      assertThat(failed.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(store.errorCount()).isEqualTo(1);
      for (int i = 5; i < 15; i++) {
        assertThat(acquire(store, "k" + i).allowed()).isTrue();
        assertThat(store.degraded()).isFalse();
      }
    }
  }

  @Test
  void frozenRedisIsAnsweredWithinTheCommandTimeoutAndTheLateCallIsRefunded() {
    try (RedisRateLimitStore store = builder(FailurePolicy.FAIL_CLOSED)
        .circuitBreaker(50, 20, 10, 3).build()) {
      assertThat(acquire(store, "t").remaining()).isEqualTo(1);
      server.freeze();
      Decision d;
      long ms;
      try {
        long start = System.nanoTime();
        d = acquire(store, "t");
        ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      } finally {
        server.thaw(); // within the call's deadline: the script charges, then is refunded
      }
      assertThat(ms).isGreaterThanOrEqualTo(TIMEOUT.toMillis() - 5).isLessThan(ANSWER_BOUND_MS);
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(store.errorCount()).isEqualTo(1);
      GuardedRedisStore guarded = (GuardedRedisStore) store;
      await("the late call refunded", () -> guarded.refundCount() == 1);
      // only the first call stays charged: the 503 charged nothing
      assertThat(admin(store).inspect(TWO_PER_MINUTE, "t").orElseThrow().windowUsed()).isEqualTo(1);
      assertThat(acquire(store, "t").remaining()).isZero();
    }
  }

  @Test
  void anAsyncCallNeverBlocksItsCallerAndIsAnsweredByThePolicyOnTime() {
    try (RedisRateLimitStore store = builder(FailurePolicy.FAIL_CLOSED)
        .circuitBreaker(50, 20, 10, 3).build()) {
      assertThat(store.acquireAsync(List.of(TWO_PER_MINUTE), List.of("t"), 1,
          Composition.SEQUENTIAL).toCompletableFuture().join().remaining()).isEqualTo(1);
      server.freeze();
      CompletableFuture<Decision> pending;
      long start = System.nanoTime();
      try {
        pending = store.acquireAsync(List.of(TWO_PER_MINUTE), List.of("t"), 1,
            Composition.SEQUENTIAL).toCompletableFuture();
        // Redis is frozen: the call cannot have been answered, so the caller was not held
        assertThat(pending).isNotDone();
        Decision d = pending.join();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(ms).isGreaterThanOrEqualTo(TIMEOUT.toMillis() - 5).isLessThan(ANSWER_BOUND_MS);
        assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      } finally {
        server.thaw();
      }
      GuardedRedisStore guarded = (GuardedRedisStore) store;
      await("the late call refunded", () -> guarded.refundCount() == 1);
      assertThat(admin(store).inspect(TWO_PER_MINUTE, "t").orElseThrow().windowUsed()).isEqualTo(1);
    }
  }

  @Test
  void aCallThatRedisRunsAfterItsDeadlineChargesNothing() {
    try (RedisRateLimitStore store = builder(FailurePolicy.FAIL_CLOSED)
        .circuitBreaker(50, 20, 10, 3).build()) {
      assertThat(acquire(store, "t").remaining()).isEqualTo(1);
      server.freeze();
      try {
        assertThat(acquire(store, "t").reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
        // the outage lasts past the call's deadline (max-wait after it was sent, which was before
        // the call returned)
        long until = System.nanoTime() + MAX_WAIT.toNanos() + TimeUnit.MILLISECONDS.toNanos(100);
        while (System.nanoTime() - until < 0) {
          LockSupport.parkNanos(until - System.nanoTime());
        }
      } finally {
        server.thaw();
      }
      // calls on the connection run in order: once this one is answered, the late one has run
      assertThat(admin(store).inspect(TWO_PER_MINUTE, "t").orElseThrow().windowUsed()).isEqualTo(1);
      assertThat(((GuardedRedisStore) store).refundCount()).isZero();
    }
  }

  @ParameterizedTest
  @EnumSource(FailurePolicy.class)
  void callsToAnUpstreamFollowThePolicyWhileRedisIsOut(FailurePolicy policy) {
    Upstream u = new Upstream("openai", WindowLimit.perMinute(3), null, null);
    Budget tenant = new Budget("tenant", WindowLimit.perMinute(100), null);
    Consumption one = Consumption.ofCall(0, 0);
    try (RedisRateLimitStore store = store(policy)) {
      assertThat(store.reserve(List.of(tenant), List.of("t"), 1, one, Composition.SEQUENTIAL, u)
          .decision().allowed()).isTrue();
      server.stop();
      List<Decision> out = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        out.add(store.reserve(List.of(tenant), List.of("t"), 1, one, Composition.SEQUENTIAL, u)
            .decision());
      }
      store.report(u, new ProviderReport(null, null, null, null, null, null,
          Duration.ofSeconds(5))); // lost on Redis, never thrown
      switch (policy) {
        case FAIL_OPEN -> {
          assertThat(out).allSatisfy(d -> assertThat(d.allowed()).isTrue());
          assertThatIllegalStateException().isThrownBy(() -> store.upstreamStatus(u));
        }
        case FAIL_CLOSED -> {
          assertThat(out).allSatisfy(d ->
              assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE));
          assertThatIllegalStateException().isThrownBy(() -> store.upstreamStatus(u));
        }
        case LOCAL_FALLBACK -> {
          // the share continues from the one call admitted through Redis: 2 more of 3
          assertThat(out).extracting(Decision::reason).containsExactly(Reason.OK, Reason.OK,
              Reason.UPSTREAM_LIMIT, Reason.UPSTREAM_LIMIT);
          assertThat(store.upstreamStatus(u).closedForMs()).as("the report reached the share")
              .isEqualTo(5_000);
        }
      }
      server.restart(); // empty data set
      awaitRecovery(store);
      ticker.advance(Duration.ofMinutes(1)); // past the window and the closing
      assertThat(store.reserve(List.of(tenant), List.of("t"), 1, one, Composition.SEQUENTIAL, u)
          .decision().allowed()).isTrue();
      assertThat(store.upstreamStatus(u).requestsRemaining()).isEqualTo(2);
    }
  }

  @Test
  void localFallbackSharesEachLimitAmongTheLiveInstancesAndKeepsTheirAdmissions() {
    // two gateway instances on one prefix, a limit of 10: each one's share is 5 while Redis is out
    Budget tenPerMinute = new Budget("rpm", WindowLimit.perMinute(10), null);
    RedisRateLimitStore.Builder both = builder(FailurePolicy.LOCAL_FALLBACK).ticker(ticker);
    try (RedisRateLimitStore a = both.build(); RedisRateLimitStore b = both.build()) {
      ((GuardedRedisStore) a).heartbeat().join();
      ((GuardedRedisStore) b).heartbeat().join();
      assertThat(((GuardedRedisStore) a).liveInstances()).isEqualTo(2);
      assertThat(((GuardedRedisStore) b).liveInstances()).isEqualTo(2);
      // instance a admits the whole limit through Redis
      for (int i = 0; i < 10; i++) {
        assertThat(a.acquire(tenPerMinute, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      }
      assertThat(b.acquire(tenPerMinute, "t", 1, Composition.SEQUENTIAL).allowed()).isFalse();

      server.stop();
      // a has used more than its share; b has its whole share: limit + (N - 1) * share = 15
      assertThat(admitted(a, tenPerMinute, "t", 20)).isZero();
      assertThat(admitted(b, tenPerMinute, "t", 20)).isEqualTo(5);
      // a window later, still out: each its share, together the limit
      ticker.advance(Duration.ofMinutes(1));
      assertThat(admitted(a, tenPerMinute, "t", 20)).isEqualTo(5);
      assertThat(admitted(b, tenPerMinute, "t", 20)).isEqualTo(5);
    }
  }

  @Test
  void whatTheFallbacksShareReservedIsReconciledAndReleasedThere() {
    // two instances: the share scales every limit, so the reservation holds the share's budgets
    Budget perKey = new Budget("per-key", WindowLimit.perMinute(10), null, null,
        ConcurrencyLimit.of(4));
    Budget chat = new Budget("chat", WindowLimit.perMinute(6), null, ModelTokenLimit.perMinute(500));
    RedisRateLimitStore.Builder both = builder(FailurePolicy.LOCAL_FALLBACK).ticker(ticker);
    try (RedisRateLimitStore a = both.build(); RedisRateLimitStore b = both.build()) {
      ((GuardedRedisStore) a).heartbeat().join();
      ((GuardedRedisStore) b).heartbeat().join();
      assertThat(((GuardedRedisStore) a).liveInstances()).isEqualTo(2);
      server.stop();
      List<Budget> levels = List.of(perKey, chat);
      List<String> keys = List.of("t", "t:m");
      Reservation first = a.reserve(levels, keys, 1, 200, Composition.SEQUENTIAL);
      Reservation second = a.reserve(levels, keys, 1, 200, Composition.SEQUENTIAL);
      assertThat(first.decision().allowed()).isTrue();
      assertThat(second.decision().reason()).as("2 slots and 250 model tokens in the share")
          .isIn(Reason.CONCURRENCY_LIMIT, Reason.TPM_LIMIT);
      a.reconcile(first, 20);
      a.releaseAsync(first).toCompletableFuture().join();
      KeySnapshot held = admin(a).inspect(chat, "t:m").orElseThrow(); // the share, while Redis is out
      assertThat(held.modelTokensUsed()).as("the estimate replaced by the usage").isEqualTo(20);
      Reservation third = a.reserve(levels, keys, 1, 200, Composition.SEQUENTIAL);
      assertThat(third.decision().allowed()).as("the slot and the tokens given back").isTrue();
      a.release(third);
    }
  }

  @Test
  void aStoreBuiltWhileRedisIsDownStartsDegradedAndRecovers() {
    server.stop();
    try (RedisRateLimitStore store = store(FailurePolicy.LOCAL_FALLBACK)) {
      assertThat(store.degraded()).isTrue();
      // the live instance count is unknown: no share can be taken safely
      Decision d = acquire(store, "t");
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(d.retryable()).isTrue();
      server.restart();
      awaitRecovery(store);
      assertThat(acquire(store, "t").remaining()).isLessThanOrEqualTo(1);
      assertThat(redisKeyCount("t")).isEqualTo(1);
    }
  }

  @Test
  void badInputIsRejectedWhateverRedisDoes() {
    server.stop();
    try (RedisRateLimitStore store = store(FailurePolicy.FAIL_OPEN)) {
      assertThatIllegalArgumentException()
          .isThrownBy(() -> store.acquire(TWO_PER_MINUTE, " ", 1, Composition.SEQUENTIAL))
          .withMessageContaining("key");
      assertThatIllegalArgumentException()
          .isThrownBy(() -> store.acquire(TWO_PER_MINUTE, "t", Double.NaN, Composition.SEQUENTIAL))
          .withMessageContaining("cost");
    }
  }

  @Test
  void badSettingsAreRejectedNamingThem() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> RedisRateLimitStore.builder(server.uri()).circuitBreaker(0, 20, 10, 3))
        .withMessageContaining("failureRateThreshold").withMessageContaining("0");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> RedisRateLimitStore.builder(server.uri()).circuitBreaker(50, 5, 10, 3))
        .withMessageContaining("minimumNumberOfCalls").withMessageContaining("10");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> RedisRateLimitStore.builder(server.uri())
            .commandTimeout(Duration.ofSeconds(1)).maxWait(Duration.ofMillis(500)).build())
        .withMessageContaining("maxWait").withMessageContaining("PT0.5S");
  }

  private static int admitted(RedisRateLimitStore store, Budget budget, String key, int calls) {
    int n = 0;
    for (int i = 0; i < calls; i++) {
      if (store.acquire(budget, key, 1, Composition.SEQUENTIAL).allowed()) {
        n++;
      }
    }
    return n;
  }

  /** Fails unless the stage completes exceptionally, within the bound of a call's longest wait. */
  private static void assertFailsWithinTheLongestWait(Supplier<CompletionStage<?>> call) {
    long start = System.nanoTime();
    assertThatThrownBy(() -> call.get().toCompletableFuture().get(10, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class);
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
        .isLessThan(MAX_WAIT.toMillis() + 900);
  }

  /**
   * The upstream's order while Redis is frozen: every call of the order completes exceptionally
   * within the longest wait (at once once the breaker is open), a decision with a turn is
   * answered by the policy (the local fallback ignores the turn), and the order in Redis is found
   * as it was once Redis answers again.
   */
  @ParameterizedTest
  @EnumSource(value = FailurePolicy.class, names = {"FAIL_CLOSED", "LOCAL_FALLBACK"})
  void aFrozenRedisFailsTheUpstreamOrdersCallsWithinTheBoundAndThePolicyDecides(
      FailurePolicy policy) throws Exception {
    Upstream openai = new Upstream("openai", WindowLimit.perMinute(100), null, null);
    UpstreamTurn a = new UpstreamTurn("a", 1, 0, 100, null);
    UpstreamTurn b = new UpstreamTurn("b", 1, 0, 100, null);
    try (RedisRateLimitStore store = store(policy)) {
      UpstreamOrder order = store.upstreamOrder();
      String waiter = order.enter(openai, a, Duration.ofHours(1)).toCompletableFuture()
          .get(10, TimeUnit.SECONDS);
      server.freeze();
      try {
        assertFailsWithinTheLongestWait(() -> order.first(openai));
        assertFailsWithinTheLongestWait(() -> order.waiting(openai));
        assertThat(store.degraded()).as("two failures of four calls").isTrue();
        assertFailsWithinTheLongestWait(() -> order.enter(openai, a, Duration.ofMinutes(1)));
        assertFailsWithinTheLongestWait(() -> order.leave(openai, waiter));
        assertFailsWithinTheLongestWait(() -> order.settled(openai, a, 50));
        Decision d = store.reserve(List.of(TWO_PER_MINUTE), List.of("b"), 1,
            Consumption.ofCall(100, 0), Composition.SEQUENTIAL, openai, b).decision();
        if (policy == FailurePolicy.FAIL_CLOSED) {
          assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
        } else {
          assertThat(d.allowed()).as("the fallback ignores the turn: " + d).isTrue();
        }
        order.signal("openai"); // never blocks, whatever Redis does
      } finally {
        server.thaw();
      }
      awaitRecovery(store);
      assertThat(order.first(openai).toCompletableFuture().get(10, TimeUnit.SECONDS))
          .contains(waiter);
      Decision d = store.reserve(List.of(TWO_PER_MINUTE), List.of("b"), 1,
          Consumption.ofCall(100, 0), Composition.SEQUENTIAL, openai, b).decision();
      assertThat(d.reason()).as("the waiting call is first again: " + d)
          .isEqualTo(Reason.UPSTREAM_LIMIT);
      assertThat(store.reserve(List.of(TWO_PER_MINUTE), List.of("a"), 1,
          Consumption.ofCall(100, 0), Composition.SEQUENTIAL, openai, a.waiting(waiter))
          .decision().allowed()).isTrue();
    }
  }

  /**
   * Moves the breaker's clock past the retry interval and calls until a call reaches Redis again
   * (Lettuce reconnects in the background); bounded.
   */
  private void awaitRecovery(RedisRateLimitStore store) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (store.degraded()) {
      assertThat(System.nanoTime() - deadline).as("recovered within 30 s").isNegative();
      ticker.advance(RETRY);
      acquire(store, "probe");
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // bounded wait for reconnection
    }
  }

  /** Waits, bounded, for something the store does when a late reply arrives. */
  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as(what + " within 10 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
  }

  /** How many keys of the layout a key has on the server, read with a client of ours. */
  private static long redisKeyCount(String key) {
    RedisClient client = RedisClient.create(server.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      String k = RedisRateLimitStore.hashedKey(key);
      return c.sync().keys("*:{" + k + "}:rpm:" + k + ":s").size();
    } finally {
      client.shutdown();
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
