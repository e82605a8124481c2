package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The upstream's order while Redis does not answer, on a server of this test's own: every call of
 * the order completes exceptionally within the store's bounded wait (and at once once the breaker
 * is open), a decision with a turn is answered by the failure policy (the local fallback ignores
 * the turn), and the order in Redis is found again as it was once Redis answers.
 */
class RedisUpstreamOrderOutageTests {

  private static final Duration TIMEOUT = Duration.ofMillis(300);
  private static final Duration MAX_WAIT = Duration.ofMillis(1000);
  private static final Duration RETRY = Duration.ofSeconds(1);
  /** Generous: a failure must come within the longest wait, plus scheduling slack on busy CI. */
  private static final long ANSWER_BOUND_MS = MAX_WAIT.toMillis() + 900;
  private static final Budget TENANT = new Budget("tenant", WindowLimit.perMinute(100), null);
  private static final Upstream OPENAI =
      new Upstream("openai", WindowLimit.perMinute(100), null, null);

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

  /** Fails unless the stage completes exceptionally, within the bound. */
  private static void assertFailsWithinBound(Supplier<CompletionStage<?>> call) {
    long start = System.nanoTime();
    assertThatThrownBy(() -> call.get().toCompletableFuture().get(10, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class);
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
        .isLessThan(ANSWER_BOUND_MS);
  }

  private static Decision reserve(RedisRateLimitStore store, UpstreamTurn turn) {
    return store.reserve(List.of(TENANT), List.of(turn.tenant()), 1,
        Consumption.ofCall(turn.estimate(), 0), Composition.SEQUENTIAL, OPENAI, turn).decision();
  }

  @ParameterizedTest
  @EnumSource(value = FailurePolicy.class, names = {"FAIL_CLOSED", "LOCAL_FALLBACK"})
  void aFrozenRedisFailsTheOrdersCallsWithinTheBoundAndThePolicyDecides(FailurePolicy policy)
      throws Exception {
    try (RedisRateLimitStore store = RedisRateLimitStore.builder(server.uri())
        .keyPrefix(TestRedis.freshPrefix())
        .commandTimeout(TIMEOUT)
        .maxWait(MAX_WAIT)
        .retryInterval(RETRY)
        .circuitBreaker(50, 4, 2, 1)
        .heartbeatInterval(Duration.ofHours(1))
        .failurePolicy(policy)
        .ticker(ticker)
        .build()) {
      UpstreamOrder order = store.upstreamOrder();
      UpstreamTurn a = new UpstreamTurn("a", 1, 0, 100, null);
      String waiter = order.enter(OPENAI, a, Duration.ofHours(1)).toCompletableFuture()
          .get(10, TimeUnit.SECONDS);
      server.freeze();
      try {
        assertFailsWithinBound(() -> order.first(OPENAI));
        assertFailsWithinBound(() -> order.waiting(OPENAI));
        assertThat(store.degraded()).as("two failures of four calls").isTrue();
        // the breaker is open: at once, without waiting on Redis
        assertFailsWithinBound(() -> order.enter(OPENAI, a, Duration.ofMinutes(1)));
        assertFailsWithinBound(() -> order.leave(OPENAI, waiter));
        assertFailsWithinBound(() -> order.settled(OPENAI, a, 50));
        Decision d = reserve(store, new UpstreamTurn("b", 1, 0, 100, null));
        if (policy == FailurePolicy.FAIL_CLOSED) {
          assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
        } else {
          assertThat(d.allowed()).as("the fallback ignores the turn: " + d).isTrue();
        }
        order.signal("openai"); // never blocks, whatever Redis does
      } finally {
        server.thaw();
      }
      // the breaker's clock past the retry interval until a probe finds Redis again
      await().atMost(Duration.ofSeconds(15)).ignoreExceptions().untilAsserted(() -> {
        ticker.advance(RETRY);
        assertThat(order.first(OPENAI).toCompletableFuture().get(5, TimeUnit.SECONDS))
            .contains(waiter);
      });
      Decision d = reserve(store, new UpstreamTurn("b", 1, 0, 100, null));
      assertThat(d.reason()).as("the waiting call is first again: " + d)
          .isEqualTo(Reason.UPSTREAM_LIMIT);
      assertThat(reserve(store, a.waiting(waiter)).allowed()).isTrue();
    }
  }
}
