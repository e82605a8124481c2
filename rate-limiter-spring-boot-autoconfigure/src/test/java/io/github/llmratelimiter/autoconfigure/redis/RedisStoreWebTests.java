package io.github.llmratelimiter.autoconfigure.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;

import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.assertj.AssertableWebApplicationContext;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

/**
 * Spring MVC applications on {@code ratelimiter.store=redis} against a real redis-server that this
 * test starts, stops and restarts: limits enforced through Redis, two applications sharing one
 * Redis, and each failure policy while Redis is down, then recovery without a restart. The store
 * reads Redis's clock; the only waits are bounded ones for Lettuce to reconnect.
 */
class RedisStoreWebTests {

  private static final String API_KEY = "sk-live-web-0123456789abcdef";
  private static final long COMMAND_TIMEOUT_MS = 100;
  private static final long RETRY_INTERVAL_MS = 300;
  /** Generous: a failure is answered within the timeout, plus scheduling slack on a busy CI. */
  private static final long ANSWER_BOUND_MS = COMMAND_TIMEOUT_MS + 900;

  private static RedisServer server;

  @BeforeAll
  static void startRedis() {
    server = RedisServer.start();
  }

  @AfterAll
  static void stopRedis() {
    server.close();
  }

  @BeforeEach
  void redisUp() {
    if (!server.running()) {
      server.restart();
    }
  }

  private static WebApplicationContextRunner gateway(String prefix, long limit, String policy) {
    return gateway(prefix, limit, policy, COMMAND_TIMEOUT_MS);
  }

  private static WebApplicationContextRunner gateway(
      String prefix, long limit, String policy, long commandTimeoutMs) {
    return new WebApplicationContextRunner()
        .withConfiguration(TestGateway.MVC)
        .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
            RateLimiterRedisAutoConfiguration.class, RateLimiterRedisMonitoringAutoConfiguration.class))
        .withUserConfiguration(TestGateway.class)
        .withPropertyValues(
            "spring.data.redis.host=127.0.0.1",
            "spring.data.redis.port=" + server.port(),
            "ratelimiter.store=redis",
            "ratelimiter.redis.key-prefix=" + prefix,
            "ratelimiter.redis.command-timeout=" + commandTimeoutMs + "ms",
            "ratelimiter.redis.retry-interval=" + RETRY_INTERVAL_MS + "ms",
            "ratelimiter.redis.failure-policy=" + policy,
            "ratelimiter.policies.routed.rpm.limit=" + limit,
            "ratelimiter.policies.annotated.rpm.limit=1",
            "ratelimiter.web.routes[0].include=/v1/**",
            "ratelimiter.web.routes[0].policy=routed");
  }

  private static MockMvc mvc(AssertableWebApplicationContext context) {
    assertThat(context).hasNotFailed().hasSingleBean(RedisRateLimitStore.class);
    return MockMvcBuilders.webAppContextSetup((WebApplicationContext) context.getSourceApplicationContext())
        .build();
  }

  private static MockHttpServletResponse call(MockMvc mvc) {
    try {
      return mvc.perform(get("/v1/routed").header("Authorization", "Bearer " + API_KEY))
          .andReturn().getResponse();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private static Status health(AssertableWebApplicationContext context) {
    return context.getBean("rateLimiterHealthIndicator", HealthIndicator.class).health().getStatus();
  }

  @Test
  void twoApplicationsSharingOneRedisNeverAdmitMoreThanTheLimitTogether() throws Exception {
    String prefix = "web-" + System.nanoTime();
    // a generous timeout: this test is about sharing, and a busy CI machine must not trip it
    WebApplicationContextRunner runner = gateway(prefix, 20, "fail-closed", 5_000);
    runner.run(one -> runner.run(two -> {
      List<MockMvc> apps = List.of(mvc(one), mvc(two));
      AtomicInteger ok = new AtomicInteger();
      AtomicInteger limited = new AtomicInteger();
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        List<Callable<Void>> calls = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
          MockMvc app = apps.get(i % 2);
          calls.add(() -> {
            int status = call(app).getStatus();
            (status == 200 ? ok : status == 429 ? limited : new AtomicInteger()).incrementAndGet();
            return null;
          });
        }
        for (Future<Void> f : pool.invokeAll(calls)) {
          f.get();
        }
      } finally {
        pool.shutdownNow();
      }
      assertThat(one.getBean(RedisRateLimitStore.class).errorCount()).isZero();
      assertThat(two.getBean(RedisRateLimitStore.class).errorCount()).isZero();
      assertThat(ok.get()).isEqualTo(20);
      assertThat(limited.get()).isEqualTo(40);
      // both applications see the shared state: each now denies
      assertThat(call(apps.get(0)).getStatus()).isEqualTo(429);
      assertThat(call(apps.get(1)).getStatus()).isEqualTo(429);
      List<String> keys = RedisKeysOnServer.stateKeys(server, prefix + ":{*");
      assertThat(keys).hasSize(1).allSatisfy(k -> assertThat(k).doesNotContain("sk-live"));
      assertThat(RedisKeysOnServer.keys(server, prefix + ":{*")).noneMatch(k -> k.contains("sk-live"));
    }));
  }

  @Test
  void failClosedAnswers503WithinTheTimeoutWhileRedisIsDownThenRecovers() {
    gateway("closed-" + System.nanoTime(), 100, "fail-closed").run(context -> {
      MockMvc mvc = mvc(context);
      awaitStatus(mvc, 200); // a cold first call on a busy machine may exceed the 100 ms timeout
      awaitUp(context);

      server.stop();
      long start = System.nanoTime();
      MockHttpServletResponse denied = call(mvc);
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(ANSWER_BOUND_MS);
      assertThat(denied.getStatus()).isEqualTo(503);
      assertThat(denied.getContentType()).isEqualTo("application/problem+json");
      assertThat(denied.getHeader("Retry-After")).isEqualTo("1");
      assertThat(denied.getHeader("retry-after-ms")).isEqualTo(Long.toString(RETRY_INTERVAL_MS));
      assertThat(denied.getContentAsString())
          .contains("\"status\":503", "\"policy\":\"routed\"", "\"retryAfterMs\":" + RETRY_INTERVAL_MS)
          .doesNotContain(API_KEY);
      assertThat(health(context)).isEqualTo(Status.DOWN);
      assertThat(context.getBean(RedisRateLimitStore.class).errorCount()).isPositive();

      server.restart();
      awaitStatus(mvc, 200);
      awaitUp(context);
      assertThat(context.getBean(RedisRateLimitStore.class).degraded()).isFalse();
    });
  }

  @Test
  void localFallbackKeepsDecidingWhileRedisIsDownThenRecovers() {
    // a generous timeout, so that the first call surely reaches Redis (a stopped Redis is detected
    // at once, whatever the timeout)
    gateway("fallback-" + System.nanoTime(), 3, "local-fallback", 5_000).run(context -> {
      MockMvc mvc = mvc(context);
      assertThat(call(mvc).getStatus()).isEqualTo(200);
      assertThat(context.getBean(RedisRateLimitStore.class).errorCount()).isZero();

      server.stop();
      // the in-memory fallback decides, continuing from the call Redis admitted: 2 more admitted,
      // then limited (not a 503)
      List<Integer> statuses = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        statuses.add(call(mvc).getStatus());
      }
      assertThat(statuses).containsExactly(200, 200, 429, 429, 429);
      assertThat(health(context)).isEqualTo(Status.DOWN);

      server.restart(); // an empty data set: Redis decides again from a fresh state
      // The exhausted fallback denies until Redis decides again: the breaker's half-open probes
      // and every call after it closes. The breaker may open once more after Redis is back (its
      // window still holds the outage's failures), so this counts admissions rather than
      // expecting one at a given call. The 2 calls the fallback admitted are written back to the
      // fresh data set: of its budget of 3, 1 is granted, never more.
      RedisRateLimitStore store = context.getBean(RedisRateLimitStore.class);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      int admitted = 0;
      while (admitted < 1) { // calls drive the breaker's probes; bounded
        assertThat(System.nanoTime() - deadline).as("1 admitted within 30 s").isNegative();
        admitted += call(mvc).getStatus() == 200 ? 1 : 0;
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
      }
      assertThat(call(mvc).getStatus()).isEqualTo(429);
      assertThat(call(mvc).getStatus()).isEqualTo(429);
      while (store.degraded() || !store.ping()) {
        assertThat(System.nanoTime() - deadline).as("recovered within 30 s").isNegative();
        assertThat(call(mvc).getStatus()).isEqualTo(429);
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
      }
      awaitUp(context);
      assertThat(call(mvc).getStatus()).isEqualTo(429); // now decided by Redis: 3 of 3
      assertThat(RedisKeysOnServer.keys(server, "fallback-*:{*")).isNotEmpty();
    });
  }

  /**
   * Waits until the health indicator reads UP: its ping waits at most the command timeout (100 ms
   * here), which a busy machine's Redis may miss once; bounded.
   */
  private static void awaitUp(AssertableWebApplicationContext context) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (health(context) != Status.UP) {
      assertThat(System.nanoTime() - deadline).as("UP within 30 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
    }
  }

  /** Calls until Redis decides again (the retry interval passes, Lettuce reconnects); bounded. */
  private static void awaitStatus(MockMvc mvc, int status) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (call(mvc).getStatus() != status) {
      assertThat(System.nanoTime() - deadline).as("status %d within 30 s", status).isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // bounded wait for reconnection
    }
  }
}
