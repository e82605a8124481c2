package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the local fallback admitted while Redis was frozen ({@code SIGSTOP}) is written back once it
 * answers again ({@code SIGCONT}), before calls of those keys are decided on Redis: on a server of
 * this test's own, with the scripts' time and the circuit breaker's clock on one manual ticker.
 * {@link FailurePolicy#LOCAL_FALLBACK} is the only policy with a fallback; the two-instance
 * measure runs with blocking and with asynchronous calls.
 *
 * <p>Settings: a command timeout of 100 ms (a call to the frozen server waits that long before the
 * fallback answers it), a circuit breaker that opens on half of its last 4 calls from 2 on and
 * closes after 1 probe, heartbeats only when a test sends them; the rest are the defaults.
 */
class OutageWriteBackTests {

  private static final Duration RETRY = Duration.ofSeconds(1);
  private static final Duration WINDOW = Duration.ofMinutes(1);
  private static final int LIMIT = 3;
  private static final Budget THREE = new Budget("rpm", WindowLimit.perMinute(LIMIT), null);
  private static final int REPETITIONS = 20;

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private final ManualTicker ticker = new ManualTicker();

  private RedisRateLimitStore.Builder builder(String prefix) {
    return RedisRateLimitStore.builder(REDIS.server().uri())
        .keyPrefix(prefix)
        .commandTimeout(Duration.ofMillis(100))
        .retryInterval(RETRY)
        .circuitBreaker(50, 4, 2, 1)
        .heartbeatInterval(Duration.ofHours(1))
        .failurePolicy(FailurePolicy.LOCAL_FALLBACK)
        .ticker(ticker);
  }

  private static GuardedRedisStore guarded(RedisRateLimitStore store) {
    return (GuardedRedisStore) store;
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aCallOfAKeyTheFallbackAdmittedWritesItsJournalBackBeforeRedisDecidesIt(boolean async) {
    // a breaker that stays closed: every call after the outage is decided on Redis
    try (RedisRateLimitStore store = builder(TestRedis.freshPrefix())
        .circuitBreaker(100, 20, 20, 1).build()) {
      guarded(store).heartbeat().join();
      assertThat(acquire(store, "t", async).allowed()).isTrue();
      REDIS.server().freeze();
      try {
        ticker.advance(Duration.ofSeconds(1));
        assertThat(acquire(store, "t", async).allowed()).isTrue(); // timed out: the fallback
        ticker.advance(Duration.ofSeconds(1));
        assertThat(acquire(store, "t", async).allowed()).isTrue();
        assertThat(journal(store).size()).as("both admitted by the fallback").isEqualTo(2);
      } finally {
        REDIS.server().thaw(); // a write-back sent meanwhile may now be answered in time
      }
      ticker.advance(RETRY);
      long errors = store.errorCount();
      Decision d = acquire(store, "t", async);
      assertThat(store.errorCount()).as("decided on Redis").isEqualTo(errors);
      assertThat(d.reason()).as("Redis holds the 2 calls the fallback admitted")
          .isEqualTo(Reason.RPM_LIMIT);
      assertThat(d.retryAfterMs()).isEqualTo(WINDOW.toMillis() - 3_000);
      assertThat(journal(store).isEmpty()).isTrue();
      await("the late call refunded", () -> guarded(store).refundCount() == 1);
      assertThat(store.administration().orElseThrow().inspect(THREE, "t").orElseThrow()
          .windowUsed()).isEqualTo(3);
    }
  }

  @Test
  void aSlotTheFallbackTookIsHeldOnRedisUntilItsCallIsReleased() {
    Budget one = new Budget("par", null, null, null, ConcurrencyLimit.of(1));
    try (RedisRateLimitStore store = builder(TestRedis.freshPrefix()).build()) {
      guarded(store).heartbeat().join();
      REDIS.server().freeze();
      Reservation held;
      try {
        held = store.reserve(List.of(one), List.of("t"), 1, 0, Composition.SEQUENTIAL);
      } finally {
        REDIS.server().thaw();
      }
      assertThat(held.holdsSlots()).isTrue();
      assertThat(LuaRateLimitStore.fromRedis(held)).as("the fallback's").isFalse();
      ticker.advance(RETRY);
      Reservation other = store.reserve(List.of(one), List.of("t"), 1, 0, Composition.SEQUENTIAL);
      assertThat(other.decision().reason()).as("the slot written back counts on Redis")
          .isEqualTo(Reason.CONCURRENCY_LIMIT);
      assertThat(guarded(store).renewedCalls()).as("and is renewed").isEqualTo(1);
      store.release(held);
      assertThat(guarded(store).renewedCalls()).isZero();
      Reservation after = store.reserve(List.of(one), List.of("t"), 1, 0, Composition.SEQUENTIAL);
      assertThat(after.decision().allowed()).as("released on Redis too").isTrue();
      assertThat(LuaRateLimitStore.fromRedis(after)).isTrue();
      store.release(after);
    }
  }

  /**
   * The hold: just after an outage, an instance whose share is used admits nothing more on Redis
   * until the other instance, whose breaker is still open, has handed its fallback's calls over.
   */
  @Test
  void justAfterAnOutageRedisAdmitsOnlyWithinTheShareUntilTheOthersHaveWrittenBack() {
    String prefix = TestRedis.freshPrefix();
    // a's breaker never opens; b's opens on its first failure, before its fallback admits the
    // call (so no write-back of b's reaches the frozen server, to run when it resumes)
    try (RedisRateLimitStore a = builder(prefix).circuitBreaker(100, 20, 20, 1).build();
        RedisRateLimitStore b = builder(prefix).circuitBreaker(50, 2, 1, 1).build()) {
      await("both instances seen live", () -> {
        guarded(a).heartbeat().join();
        guarded(b).heartbeat().join();
        return guarded(a).liveInstances() == 2 && guarded(b).liveInstances() == 2;
      });
      assertThat(acquire(a, "t", false).allowed()).isTrue();
      assertThat(acquire(a, "t", false).allowed()).isTrue(); // a's share of 1 is used
      REDIS.server().freeze();
      try {
        assertThat(acquire(a, "t", false).allowed()).isFalse(); // a's share
        assertThat(acquire(b, "t", false).allowed()).isTrue(); // b's share: journaled
        assertThat(b.degraded()).isTrue();
      } finally {
        REDIS.server().thaw();
      }
      assertThat(journal(b).size()).isEqualTo(1);
      Decision held = acquire(a, "t", false);
      assertThat(held.reason()).as("Redis would admit a third; a's share does not")
          .isEqualTo(Reason.RPM_LIMIT);
      assertThat(guarded(a).holding()).isTrue();
      assertThat(journal(b).size()).as("b's breaker is still open").isEqualTo(1);
      ticker.advance(RETRY.plusSeconds(1)); // a's hold ends; b's breaker lets its write-back through
      await("b's journal written back", () -> journal(b).isEmpty());
      assertThat(guarded(a).holding()).isFalse();
      Decision after = acquire(a, "t", false);
      assertThat(after.reason()).as("Redis holds b's call").isEqualTo(Reason.RPM_LIMIT);
      await("a's held call undone on Redis", () -> a.administration().orElseThrow()
          .inspect(THREE, "t").orElseThrow().windowUsed() == LIMIT);
    }
  }

  /**
   * The measure: two instances (a limit of 3 a minute: a share of 1 each), two calls on
   * Redis through the first, Redis frozen, calls alternating over both, Redis thawed, calls
   * alternating until a window after the return has passed. Every window that holds the return
   * admits at most the limit plus what the other instance's fallback admitted and had not handed
   * over when a call was admitted after the return (the term in flight of {@link
   * FailurePolicy#LOCAL_FALLBACK}'s bound), and both journals are written back by themselves
   * within 10 s. Prints the per-window maxima.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void twoInstancesAdmitAtMostTheLimitInTheWindowThatHoldsRedissReturn(boolean async) {
    String prefix = TestRedis.freshPrefix();
    TreeMap<Integer, Integer> maxima = new TreeMap<>();
    int inFlightSeen = 0;
    int fallbackAdmitted = 0;
    try (RedisRateLimitStore a = builder(prefix).build();
        RedisRateLimitStore b = builder(prefix).build()) {
      await("both instances seen live", () -> {
        guarded(a).heartbeat().join(); // a heartbeat may time out on a busy machine: sent again
        guarded(b).heartbeat().join();
        return guarded(a).liveInstances() == 2 && guarded(b).liveInstances() == 2;
      });
      List<RedisRateLimitStore> both = List.of(a, b);
      for (int r = 0; r < REPETITIONS; r++) {
        String key = "t" + r;
        List<Long> admitted = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
          if (acquire(a, key, async).allowed()) {
            admitted.add(ticker.read());
          }
          ticker.advance(Duration.ofSeconds(1));
        }
        ticker.advance(Duration.ofSeconds(10));
        REDIS.server().freeze();
        try {
          for (int i = 0; i < 6; i++) {
            if (acquire(both.get(i % 2), key, async).allowed()) {
              admitted.add(ticker.read());
            }
            ticker.advance(Duration.ofSeconds(1));
          }
        } finally {
          REDIS.server().thaw();
        }
        int outage = journal(a).size() + journal(b).size();
        fallbackAdmitted += outage;
        ticker.advance(RETRY);
        long returned = ticker.read();
        long end = returned + WINDOW.toNanos() + RETRY.toNanos();
        // in flight: what the other instance's fallback admitted and had not handed to Redis
        // when a call was admitted after the return (its journal holds only this key's calls)
        int inFlight = 0;
        for (int i = 0; ticker.read() < end; i++) {
          int other = journal(both.get((i + 1) % 2)).size();
          if (acquire(both.get(i % 2), key, async).allowed()) {
            admitted.add(ticker.read());
            inFlight = Math.max(inFlight, other);
          }
          ticker.advance(Duration.ofSeconds(2));
        }
        inFlightSeen += inFlight > 0 ? 1 : 0;
        int max = maxInWindowsHolding(admitted, returned);
        maxima.merge(max, 1, Integer::sum);
        assertThat(max).as("repetition %d: admissions %s, return at %d, in flight %d", r,
            admitted, returned, inFlight).isLessThanOrEqualTo(LIMIT + inFlight);
        await("both journals written back", () -> journal(a).isEmpty() && journal(b).isEmpty());
        ticker.advance(WINDOW);
      }
    }
    System.out.printf("[write-back] %s calls, %d repetitions: calls the fallback admitted during"
        + " the outages %d; max admitted per window holding the return -> repetitions %s;"
        + " repetitions with a call admitted while another's were in flight %d%n",
        async ? "async" : "blocking", REPETITIONS, fallbackAdmitted, maxima, inFlightSeen);
    assertThat(fallbackAdmitted).as("the fallback admitted calls in the outages").isPositive();
  }

  /**
   * The most admissions in a window of {@link #WINDOW} that holds {@code returned}: a window that
   * ends at an admission at or after it and starts before it.
   */
  private static int maxInWindowsHolding(List<Long> admitted, long returned) {
    int max = 0;
    for (long end : admitted) {
      if (end < returned || end - WINDOW.toNanos() >= returned) {
        continue;
      }
      int n = 0;
      for (long t : admitted) {
        if (t <= end && t > end - WINDOW.toNanos()) {
          n++;
        }
      }
      max = Math.max(max, n);
    }
    return max;
  }

  private static Decision acquire(RedisRateLimitStore store, String key, boolean async) {
    if (async) {
      return store.acquireAsync(List.of(THREE), List.of(key), 1, Composition.SEQUENTIAL)
          .toCompletableFuture().join();
    }
    return store.acquire(THREE, key, 1, Composition.SEQUENTIAL);
  }

  private static OutageJournal journal(RedisRateLimitStore store) {
    return guarded(store).journal();
  }

  /** Waits, bounded, for something the stores do on their own when Redis answers. */
  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as(what + " within 10 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
  }
}
