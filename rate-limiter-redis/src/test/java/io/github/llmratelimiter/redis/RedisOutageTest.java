package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Redis stopped, frozen or absent at start-up, on a server of this test's own: each failure policy
 * answers within the command timeout, errors are counted, and the store recovers by itself once
 * Redis answers again. The store's clock (its retry interval) is a manual ticker, so no test waits
 * for time to pass; the only waits are bounded ones for Lettuce to reconnect.
 */
class RedisOutageTest {

  private static final Duration TIMEOUT = Duration.ofMillis(100);
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

  private RedisRateLimitStore store(FailurePolicy policy) {
    return RedisRateLimitStore.builder(server.uri())
        .keyPrefix(TestRedis.freshPrefix())
        .commandTimeout(TIMEOUT)
        .retryInterval(RETRY)
        .failurePolicy(policy)
        .ticker(ticker)
        .build();
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
      assertThat(store.degraded()).isTrue();
      assertThat(store.errorCount()).isEqualTo(1);
      assertThat(store.ping()).isFalse();
      Decision second = acquire(store, "t");
      Decision third = acquire(store, "t");
      switch (policy) {
        case FAIL_OPEN -> {
          assertThat(first).isEqualTo(Decision.allow(0, 0, "rpm"));
          assertThat(third).isEqualTo(first);
          assertThatIllegalStateException().isThrownBy(() -> store.inspect(TWO_PER_MINUTE, "t"))
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
          // the in-memory store limits this instance on its own, from a fresh state
          assertThat(first.remaining()).isEqualTo(1);
          assertThat(second.remaining()).isZero();
          assertThat(third.reason()).isEqualTo(Reason.RPM_LIMIT);
          assertThat(store.inspect(TWO_PER_MINUTE, "t").orElseThrow().windowUsed()).isEqualTo(2);
        }
      }
      // within the retry interval Redis is not asked again: no further errors
      assertThat(store.errorCount()).isEqualTo(1);

      server.restart(); // empty data set
      awaitRecovery(store);
      Decision after = acquire(store, "after");
      assertThat(after.remaining()).isEqualTo(1);
      assertThat(redisKeyCount(store, "after")).isEqualTo(1);
      assertThat(store.ping()).isTrue();
    }
  }

  @Test
  void frozenRedisIsAnsweredWithinTheCommandTimeout() {
    try (RedisRateLimitStore store = store(FailurePolicy.FAIL_OPEN)) {
      assertThat(acquire(store, "t").remaining()).isEqualTo(1);
      server.freeze();
      try {
        long start = System.nanoTime();
        Decision d = acquire(store, "t");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(ms).isGreaterThanOrEqualTo(TIMEOUT.toMillis() - 5).isLessThan(ANSWER_BOUND_MS);
        assertThat(d).isEqualTo(Decision.allow(0, 0, "rpm"));
        assertThat(store.degraded()).isTrue();
        assertThat(store.errorCount()).isEqualTo(1);
      } finally {
        server.thaw();
      }
      awaitRecovery(store);
      assertThat(store.inspect(TWO_PER_MINUTE, "t")).isPresent();
    }
  }

  @Test
  void aStoreBuiltWhileRedisIsDownStartsDegradedAndRecovers() {
    server.stop();
    try (RedisRateLimitStore store = store(FailurePolicy.LOCAL_FALLBACK)) {
      assertThat(store.degraded()).isTrue();
      assertThat(acquire(store, "t").remaining()).isEqualTo(1);
      server.restart();
      awaitRecovery(store);
      assertThat(acquire(store, "t").remaining()).isLessThanOrEqualTo(1);
      assertThat(redisKeyCount(store, "t")).isEqualTo(1);
    }
  }

  @Test
  void badInputIsRejectedWhateverRedisDoes() {
    server.stop();
    try (RedisRateLimitStore store = store(FailurePolicy.FAIL_OPEN)) {
      org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
          .isThrownBy(() -> store.acquire(TWO_PER_MINUTE, " ", 1, Composition.SEQUENTIAL))
          .withMessageContaining("key");
      org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
          .isThrownBy(() -> store.acquire(TWO_PER_MINUTE, "t", Double.NaN, Composition.SEQUENTIAL))
          .withMessageContaining("cost");
    }
  }

  /**
   * Moves the store's clock past the retry interval and calls until a call reaches Redis again
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

  /** How many keys of the layout this store's key has on the server, read with a client of ours. */
  private static long redisKeyCount(RedisRateLimitStore store, String key) {
    RedisClient client = RedisClient.create(server.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      String k = RedisRateLimitStore.hashedKey(key);
      return c.sync().keys("*:{" + k + "}:rpm:" + k + ":s").size();
    } finally {
      client.shutdown();
    }
  }
}
