package io.github.llmratelimiter.autoconfigure.redis;

import static io.github.llmratelimiter.autoconfigure.redis.RedisGateways.LIMIT;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.Bursts;
import io.github.llmratelimiter.autoconfigure.Bursts.Answer;
import io.github.llmratelimiter.redis.RedisServer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Bursts of one key against real gateway applications on one real redis-server, with the Redis
 * store's default settings: 200 concurrent requests, a fresh key per repetition, 20 repetitions,
 * and exactly the limit passes every time, with one application and with two sharing the Redis.
 * On a 2-core machine a burst wakes every request thread at once; no request may time out, since
 * a timed-out request would be answered by the failure policy instead of the shared budget.
 */
class RedisBurstTests {

  private static final int BURST = 200;
  private static final int REPETITIONS = 20;

  private static RedisServer server;

  @BeforeAll
  static void startRedis() {
    server = RedisServer.start();
  }

  @AfterAll
  static void stopRedis() {
    server.close();
  }

  @Test
  void oneApplicationAdmitsExactlyTheLimitOfEveryBurst() {
    try (ConfigurableApplicationContext app =
        RedisGateways.start(server, "burst1-" + System.nanoTime())) {
      bursts(List.of(app));
    }
  }

  @Test
  void twoApplicationsSharingOneRedisAdmitExactlyTheLimitOfEveryBurst() {
    String prefix = "burst2-" + System.nanoTime();
    try (ConfigurableApplicationContext one = RedisGateways.start(server, prefix);
        ConfigurableApplicationContext two = RedisGateways.start(server, prefix)) {
      bursts(List.of(one, two));
    }
  }

  private static void bursts(List<ConfigurableApplicationContext> apps) {
    List<String> results = new ArrayList<>();
    for (int rep = 0; rep < REPETITIONS; rep++) {
      List<Answer> answers = RedisGateways.burst(apps, "sk-burst-" + rep + "-" + System.nanoTime(),
          BURST);
      long errors = apps.stream().mapToLong(a -> RedisGateways.store(a).errorCount()).sum();
      results.add("rep " + rep + ": ok=" + Bursts.count(answers, 200)
          + " limited=" + Bursts.count(answers, 429)
          + " slowest=" + answers.stream().mapToLong(Answer::millis).max().orElse(0) + "ms"
          + " storeErrors=" + errors + " statuses=" + Bursts.histogram(answers)
            + (Bursts.unexpected(answers).isEmpty() ? "" : " unexpected=" + Bursts.unexpected(answers)));
    }
    System.out.println(String.join("\n", results));
    assertThat(results).allSatisfy(r -> assertThat(r)
        .contains("ok=" + LIMIT + " ", "limited=" + (BURST - LIMIT) + " ", "storeErrors=0"));
  }
}
