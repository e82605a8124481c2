package io.github.llmratelimiter.autoconfigure.redis;

import static io.github.llmratelimiter.autoconfigure.redis.RedisGateways.LIMIT;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.Bursts.Answer;
import io.github.llmratelimiter.autoconfigure.Bursts;
import io.github.llmratelimiter.redis.RedisStores;
import io.github.llmratelimiter.redis.RunningRedis;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * An outage of a healthy Redis under each failure policy, with two real gateway applications and
 * the default settings otherwise: one request of a key passes, Redis is frozen (SIGSTOP: it keeps
 * its connections and answers nothing), a burst of 100 requests of that key arrives, Redis resumes
 * (SIGCONT). Every request is answered within a command timeout (plus slack) after it was sent;
 * the instances together admit no more than the stated bound; and no request answered by the
 * policy (a 503, a fail-open pass, a fallback decision) stays charged on Redis, although Redis runs
 * the requests it had queued once it resumes: the key has its limit less the one request that Redis
 * admitted.
 */
class RedisOutageWebTests {

  private static final int BURST = 100;
  /**
   * The default command timeout (1 s of silence from Redis), plus scheduling slack on a loaded
   * 2-core machine; well below the longest wait (max-wait, 5 s).
   */
  private static final long LATENCY_BOUND_MS = 2_000 + 1_000;

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();



  @ParameterizedTest
  @ValueSource(strings = {"fail-closed", "fail-open", "local-fallback"})
  void anOutageChargesNothingThePolicyAnsweredAndAdmitsWithinTheBound(String policy) {
    String prefix = "outage-" + policy + "-" + System.nanoTime();
    String policyArg = "--ratelimiter.redis.failure-policy=" + policy;
    try (ConfigurableApplicationContext one = RedisGateways.start(REDIS.server(), prefix, policyArg);
        ConfigurableApplicationContext two = RedisGateways.start(REDIS.server(), prefix, policyArg)) {
      List<ConfigurableApplicationContext> apps = List.of(one, two);
      if (policy.equals("local-fallback")) {
        await("both instances see each other", () -> apps.stream()
            .allMatch(a -> RedisStores.liveInstances(RedisGateways.store(a)) == 2));
      }
      String key = "sk-outage-" + System.nanoTime();
      assertThat(RedisGateways.burst(List.of(one), key, 1)).extracting(Answer::status)
          .containsExactly(200);

      List<Answer> answers = Bursts.whileFrozen(REDIS.server(), () -> RedisGateways.burst(apps, key, BURST));
      assertThat(Bursts.report(policy, answers)).isLessThan(LATENCY_BOUND_MS);
      switch (policy) {
        case "fail-closed" -> assertThat(Bursts.count(answers, 503)).isEqualTo(BURST);
        case "fail-open" -> assertThat(Bursts.count(answers, 200)).isEqualTo(BURST);
        default -> {
          // N = 2 instances, share s = max(1, floor(3 / 2)) = 1: the first instance admitted 1
          // through Redis and admits nothing more; the second admits its share. Together with the
          // one request Redis admitted: at most L + (N - 1) * s = 4, here 2.
          assertThat(Bursts.count(answers, 200)).isEqualTo(1);
          assertThat(Bursts.count(answers, 429)).isEqualTo(BURST - 1);
        }
      }

      // Redis runs what was queued when it resumes; every charge of a request the policy
      // answered is refunded when its late reply arrives, and what the local fallback admitted
      // is written back
      await("both instances recover", () -> apps.stream()
          .noneMatch(a -> {
            RedisGateways.burst(List.of(a), "sk-probe-" + System.nanoTime(), 1);
            return RedisGateways.store(a).degraded();
          }));
      long held = 1 + (policy.equals("local-fallback") ? Bursts.count(answers, 200) : 0);
      await("the key holds the request Redis admitted and those the fallback admitted",
          () -> RedisGateways.windowUsed(one, key) == held);
      // for a moment after an outage, what Redis admits must fit each instance's share too
      await("the hold after the outage ends", () -> apps.stream()
          .noneMatch(a -> RedisStores.holding(RedisGateways.store(a))));
      List<Answer> after = RedisGateways.burst(apps, key, 10);
      assertThat(Bursts.count(after, 200)).isEqualTo(LIMIT - held);
      assertThat(Bursts.count(after, 429)).isEqualTo(10 - (LIMIT - held));
    }
  }

  /** Waits, bounded, for what Redis and the stores do once Redis resumes. */
  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as(what + " within 20 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
    }
  }
}
