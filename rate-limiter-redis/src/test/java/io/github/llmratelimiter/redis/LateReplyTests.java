package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Calls whose replies come after their callers stopped waiting, on a healthy Redis: the script
 * ran and charged, the failure policy answered the caller, and the charge must not stay. The
 * replies are held in a proxy ({@link ReplyHoldingProxy}) or Redis is frozen; what Redis holds is
 * read by a second store that talks to Redis directly. Real time passes only where the scenario is
 * about real time (a reply held for seconds, a window that slides), each wait bounded.
 */
class LateReplyTests {

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private static final Budget PER_MINUTE = new Budget("rpm", WindowLimit.perMinute(100), null);

  private static RedisRateLimitStore.Builder failClosed(io.lettuce.core.RedisURI uri, String prefix) {
    return RedisRateLimitStore.builder(uri).keyPrefix(prefix)
        .commandTimeout(Duration.ofMillis(100)).maxWait(Duration.ofMillis(300))
        .failurePolicy(FailurePolicy.FAIL_CLOSED);
  }

  private static RedisRateLimitStore checker(String prefix) {
    return RedisRateLimitStore.builder(REDIS.server().uri()).keyPrefix(prefix)
        .commandTimeout(Duration.ofSeconds(5)).failurePolicy(FailurePolicy.FAIL_CLOSED).build();
  }

  private static long windowUsed(RedisRateLimitStore store, Budget b, String key) {
    return admin(store).inspect(b, key).map(KeySnapshot::windowUsed).orElse(0L);
  }

  @Test
  void aReplyHeldLongAfterItsCallerGaveUpIsStillRefunded() throws Exception {
    String prefix = TestRedis.freshPrefix();
    try (ReplyHoldingProxy proxy = new ReplyHoldingProxy(REDIS.server().port());
        RedisRateLimitStore store = failClosed(proxy.uri(), prefix).build();
        RedisRateLimitStore check = checker(prefix)) {
      assertThat(store.acquire(PER_MINUTE, "warm", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      proxy.hold();
      Decision d = store.acquire(PER_MINUTE, "victim", 1, Composition.SEQUENTIAL);
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      await("the script ran on Redis", () -> windowUsed(check, PER_MINUTE, "victim") == 1);
      // the reply stays held far past the call's longest wait (300 ms)
      parkMillis(1500);
      proxy.release();
      await("the late reply refunded", () -> RedisStores.refundCount(store) == 1);
      assertThat(windowUsed(check, PER_MINUTE, "victim")).isZero();
    }
  }

  @Test
  void aLateReplyOfAnAdmittedCallGivesBackTheSlotItTookAndNoOther() throws Exception {
    String prefix = TestRedis.freshPrefix();
    Budget slots = new Budget("par", WindowLimit.perMinute(100), null, null,
        ConcurrencyLimit.of(2));
    try (ReplyHoldingProxy proxy = new ReplyHoldingProxy(REDIS.server().port());
        RedisRateLimitStore store = failClosed(proxy.uri(), prefix).build();
        RedisRateLimitStore check = checker(prefix)) {
      Reservation held = check.reserve(List.of(slots), List.of("t"), 1, 0, Composition.SEQUENTIAL);
      assertThat(held.holdsSlots()).isTrue();
      assertThat(store.acquire(PER_MINUTE, "warm", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      proxy.hold();
      Reservation answered = store.reserve(List.of(slots), List.of("t"), 1, 0,
          Composition.SEQUENTIAL);
      assertThat(answered.decision().reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(answered.holdsSlots()).isFalse();
      await("the script took a slot on Redis", () -> inFlight(check, slots) == 2);
      proxy.release();
      await("the late reply refunded", () -> RedisStores.refundCount(store) == 1);
      KeySnapshot s = admin(check).inspect(slots, "t").orElseThrow();
      assertThat(s.inFlight()).as("the other call's slot stays").isEqualTo(1);
      assertThat(s.windowUsed()).isEqualTo(1);
      check.release(held);
      assertThat(inFlight(check, slots)).isZero();
    }
  }

  private static long inFlight(RedisRateLimitStore store, Budget b) {
    return admin(store).inspect(b, "t").map(KeySnapshot::inFlight).orElse(0L);
  }

  @Test
  void aLateRefundNeverTakesAnotherCallsAdmission() throws Exception {
    String prefix = TestRedis.freshPrefix();
    Budget onePerSecond = new Budget("rps", new WindowLimit(1, Duration.ofSeconds(1)), null);
    ManualTicker ticker = new ManualTicker(); // both stores' time: the window moves only when told
    try (ReplyHoldingProxy proxy = new ReplyHoldingProxy(REDIS.server().port());
        RedisRateLimitStore late = failClosed(proxy.uri(), prefix).ticker(ticker).build();
        RedisRateLimitStore other = RedisRateLimitStore.builder(REDIS.server().uri())
            .keyPrefix(prefix).commandTimeout(Duration.ofSeconds(5))
            .failurePolicy(FailurePolicy.FAIL_CLOSED).ticker(ticker).build()) {
      late.acquire(PER_MINUTE, "warm", 1, Composition.SEQUENTIAL);
      proxy.hold();
      assertThat(late.acquire(onePerSecond, "k", 1, Composition.SEQUENTIAL).reason())
          .isEqualTo(Reason.STORE_UNAVAILABLE);
      await("the script ran on Redis", () -> windowUsed(other, onePerSecond, "k") == 1);
      ticker.advance(Duration.ofMillis(1300)); // the late call's admission has left the 1 s window
      assertThat(other.acquire(onePerSecond, "k", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      proxy.release();
      await("the late reply refunded", () -> RedisStores.refundCount(late) == 1);
      assertThat(other.acquire(onePerSecond, "k", 1, Composition.SEQUENTIAL).reason())
          .as("the other call's admission stays").isEqualTo(Reason.RPM_LIMIT);
    }
  }

  @Test
  void aSequentialDenyAfterLevelsThatReservedModelTokensIsRefundedWhole() {
    String prefix = TestRedis.freshPrefix();
    Budget org = new Budget("org", WindowLimit.perMinute(1000), null,
        ModelTokenLimit.perMinute(100_000));
    Budget key = new Budget("key", WindowLimit.perMinute(1), null);
    try (RedisRateLimitStore store = failClosed(REDIS.server().uri(), prefix)
            .maxWait(Duration.ofSeconds(5)).build();
        RedisRateLimitStore check = checker(prefix)) {
      assertThat(store.reserve(List.of(org, key), List.of("t", "t/k"), 1, 100,
          Composition.SEQUENTIAL).decision().allowed()).isTrue();
      REDIS.server().freeze();
      Reservation answered;
      try {
        answered = store.reserve(List.of(org, key), List.of("t", "t/k"), 1, 500,
            Composition.SEQUENTIAL);
      } finally {
        REDIS.server().thaw();
      }
      assertThat(answered.decision().reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      // on Redis the call was denied at "key" after "org" took its window slot and 500 tokens
      await("the late reply refunded", () -> RedisStores.refundCount(store) == 1);
      KeySnapshot s = admin(check).inspect(org, "t").orElseThrow();
      assertThat(s.windowUsed()).isEqualTo(1);
      assertThat(s.modelTokensUsed()).isEqualTo(100);
    }
  }

  @Test
  void aLateSequentialDenyBySlotsRefundsNoWindowAtTheLevelThatDenied() throws Exception {
    String prefix = TestRedis.freshPrefix();
    Budget org = new Budget("org", WindowLimit.perMinute(1000), null);
    Budget par = new Budget("par", WindowLimit.perMinute(100), null, null, ConcurrencyLimit.of(1));
    List<Budget> levels = List.of(org, par);
    List<String> keys = List.of("t", "t/k");
    try (ReplyHoldingProxy proxy = new ReplyHoldingProxy(REDIS.server().port());
        RedisRateLimitStore store = failClosed(proxy.uri(), prefix).build();
        RedisRateLimitStore check = checker(prefix)) {
      Reservation first = check.reserve(levels, keys, 1, 0, Composition.SEQUENTIAL);
      assertThat(first.decision().allowed()).isTrue();
      assertThat(store.acquire(PER_MINUTE, "warm", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      proxy.hold();
      Reservation answered = store.reserve(levels, keys, 1, 0, Composition.SEQUENTIAL);
      assertThat(answered.decision().reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      // on Redis, "org" admitted and charged its window; "par" denied by its one slot, charging nothing
      await("the script ran on Redis", () -> windowUsed(check, org, "t") == 2);
      assertThat(windowUsed(check, par, "t/k")).isEqualTo(1);
      check.release(first);
      Reservation second = check.reserve(levels, keys, 1, 0, Composition.SEQUENTIAL);
      assertThat(second.decision().allowed()).isTrue();
      proxy.release();
      await("the late reply refunded", () -> RedisStores.refundCount(store) == 1);
      assertThat(windowUsed(check, org, "t")).as("the late call's charge is refunded").isEqualTo(2);
      assertThat(windowUsed(check, par, "t/k")).as("the later admission stays").isEqualTo(2);
      check.release(second);
    }
  }

  @Test
  void aBucketRefundNeverGivesBackMoreThanTheBucketWouldHoldHadTheCallNeverRun() {
    ManualTicker ticker = new ManualTicker();
    String prefix = TestRedis.freshPrefix();
    Budget bucket = new Budget("burst", null, new BucketLimit(10, 1));
    try (RedisRateLimitStore store = RedisRateLimitStore.builder(REDIS.server().uri())
        .keyPrefix(prefix).ticker(ticker).build()) {
      LuaRateLimitStore lua = ((GuardedRedisStore) store).lua();
      LuaRateLimitStore.Call late = lua.plan(bucket, "k", 5, Composition.SEQUENTIAL);
      long sent = System.nanoTime();
      AcquireReply reply = lua.replies().await(lua.submit(late, sent + 60_000_000_000L), sent);
      ticker.advance(Duration.ofSeconds(1));
      assertThat(store.acquire(bucket, "k", 4, Composition.SEQUENTIAL).allowed()).isTrue();
      ticker.advance(Duration.ofSeconds(2));
      assertThat(lua.refund(late, reply).join()).isTrue();
      // without the late call: 10, then 6 after the other call, 8 two seconds later; with it and
      // its refund: 4 now, plus the cost less the refill since it ran, 5 - 3 = 2
      double tokens = admin(store).inspect(bucket, "k").orElseThrow().tokens();
      assertThat(tokens).isEqualTo(6.0).isLessThanOrEqualTo(8.0);
    }
  }

  @Test
  void anAsyncCallNeverWaitsForTheFirstConnection() {
    ManualTicker ticker = new ManualTicker();
    REDIS.server().freeze();
    try (RedisRateLimitStore store = failClosed(REDIS.server().uri(), TestRedis.freshPrefix())
        .heartbeatInterval(Duration.ofHours(1)).ticker(ticker).build()) {
      assertThat(store.degraded()).isTrue();
      ticker.advance(Duration.ofSeconds(2)); // past the retry interval: the next call probes
      CompletableFuture<Decision> probe = store.acquireAsync(List.of(PER_MINUTE), List.of("k"), 1,
          Composition.SEQUENTIAL).toCompletableFuture();
      // no connection can have opened: had the call waited for one, it would be answered now
      assertThat(probe).isNotDone();
      assertThat(probe.join().reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    } finally {
      REDIS.server().thaw();
    }
  }

  private static void parkMillis(long ms) {
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    while (System.nanoTime() - until < 0) {
      LockSupport.parkNanos(until - System.nanoTime());
    }
  }

  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as(what + " within 10 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
