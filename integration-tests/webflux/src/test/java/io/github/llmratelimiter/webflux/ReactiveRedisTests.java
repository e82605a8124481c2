package io.github.llmratelimiter.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.Bursts.Answer;
import io.github.llmratelimiter.autoconfigure.Bursts;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RedisStores;
import io.github.llmratelimiter.redis.RunningRedis;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The reactive path on the Redis store, against a real redis-server, under BlockHound: the filter
 * charges through the store's asynchronous API (one {@code EVALSHA}, its reply completing on
 * Lettuce's event loop), so bursts of 100 concurrent calls of one key over two instances admit exactly the limit; and
 * an outage (Redis frozen with SIGSTOP: it keeps its connections and answers nothing) is answered
 * by the failure policy within a command timeout, without blocking any event loop.
 */
class ReactiveRedisTests {

  private static final int BURST = 100;
  private static final int REPETITIONS = Integer.getInteger("bursts.repetitions", 20);
  /**
   * The default command timeout (1 s of silence from Redis), plus scheduling slack on a loaded
   * 2-core machine; well below the longest wait (max-wait, 5 s).
   */
  private static final long LATENCY_BOUND_MS = 2_000 + 1_000;

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private static ConfigurableApplicationContext start(String prefix, String... extra) {
    List<String> args = new ArrayList<>(List.of(
        "--spring.data.redis.host=127.0.0.1",
        "--spring.data.redis.port=" + REDIS.server().port(),
        "--ratelimiter.store=redis",
        "--ratelimiter.redis.key-prefix=" + prefix,
        "--management.health.redis.enabled=false"));
    args.addAll(List.of(extra));
    return ChatGateway.start(args.toArray(String[]::new));
  }

  private static RedisRateLimitStore store(ConfigurableApplicationContext app) {
    return app.getBean(RedisRateLimitStore.class);
  }

  /** The window the key uses on the chat policy's gpt-4o level, as Redis holds it. */
  private static long windowUsed(ConfigurableApplicationContext app, String apiKey) {
    RateLimitPolicy chat = app.getBean(RateLimitPolicies.class).policy("chat");
    RateLimitKey key = RateLimitKey.of(apiKey, "gpt-4o");
    return store(app).administration().orElseThrow()
        .inspect(chat.budgets(key).get(0), chat.keys(key).get(0))
        .map(KeySnapshot::windowUsed).orElse(0L);
  }

  @Test
  void everyBurstOf100ConcurrentCallsOfOneKeyOverTwoInstancesAdmitsExactlyTheLimit() {
    String prefix = "webflux-burst-" + System.nanoTime();
    try (ConfigurableApplicationContext first = start(prefix);
        ConfigurableApplicationContext second = start(prefix)) {
      List<Integer> ports = List.of(ChatGateway.port(first), ChatGateway.port(second));
      for (int port : ports) { // each handler's JSON decoder, built once
        Bursts.statuses(port, "sk-warm-up-0123456789", 1);
      }
      List<String> results = new ArrayList<>();
      for (int rep = 0; rep < REPETITIONS; rep++) {
        String key = "sk-redis-burst-" + rep + "-" + System.nanoTime();
        // errors of this burst only: start-up is not under test here
        long errorsBefore = store(first).errorCount() + store(second).errorCount();
        List<Answer> answers = Bursts.burst(ports, key, BURST);
        results.add("rep " + rep + ": ok=" + Bursts.count(answers, 200)
            + " limited=" + Bursts.count(answers, 429)
            + " slowest=" + answers.stream().mapToLong(Answer::millis).max().orElse(0) + "ms"
            + " storeErrors="
            + (store(first).errorCount() + store(second).errorCount() - errorsBefore)
            + " onRedis=" + windowUsed(first, key)
            + " statuses=" + Bursts.histogram(answers)
            + (Bursts.unexpected(answers).isEmpty() ? "" : " unexpected=" + Bursts.unexpected(answers)));
      }
      System.out.println(String.join("\n", results));
      assertThat(results).hasSize(REPETITIONS).isNotEmpty().allSatisfy(r -> assertThat(r).contains("ok=" + ChatGateway.LIMIT + " ",
          "limited=" + (BURST - ChatGateway.LIMIT) + " ", "storeErrors=0",
          "onRedis=" + ChatGateway.LIMIT));
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"fail-closed", "fail-open", "local-fallback"})
  void anOutageIsAnsweredByTheFailurePolicyWithinATimeoutWithoutBlocking(String policy) {
    try (ConfigurableApplicationContext app = start("webflux-outage-" + policy + "-" + System.nanoTime(),
        "--ratelimiter.redis.failure-policy=" + policy)) {
      int port = ChatGateway.port(app);
      if (policy.equals("local-fallback")) {
        await("the instance sees itself live", () -> RedisStores.liveInstances(store(app)) == 1);
      }
      String key = "sk-outage-" + System.nanoTime();
      assertThat(Bursts.burst(List.of(port), key, 1)).extracting(Answer::status).containsExactly(200);

      List<Answer> answers = Bursts.whileFrozen(REDIS.server(), () -> Bursts.burst(List.of(port), key, BURST));
      assertThat(Bursts.report(policy, answers)).isLessThan(LATENCY_BOUND_MS);
      switch (policy) {
        case "fail-closed" -> assertThat(Bursts.count(answers, 503)).isEqualTo(BURST);
        case "fail-open" -> assertThat(Bursts.count(answers, 200)).isEqualTo(BURST);
        default -> {
          // one instance: its share is the whole limit (3), which already holds the one call Redis
          // admitted: 2 more
          assertThat(Bursts.count(answers, 200)).isEqualTo(ChatGateway.LIMIT - 1);
          assertThat(Bursts.count(answers, 429)).isEqualTo(BURST - (ChatGateway.LIMIT - 1));
        }
      }
      // Redis runs what was queued when it resumes; every charge of a call the policy answered is
      // refunded when its late reply arrives, and what the local fallback admitted is written back
      await("the store recovers", () -> {
        Bursts.burst(List.of(port), "sk-probe-" + System.nanoTime(), 1);
        return !store(app).degraded();
      });
      long held = 1 + (policy.equals("local-fallback") ? Bursts.count(answers, 200) : 0);
      await("the key holds the call Redis admitted and those the fallback admitted",
          () -> windowUsed(app, key) == held);
    }
  }

  /** Waits, bounded, for what Redis and the store do once Redis resumes. */
  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as(what + " within 20 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
    }
  }
}
