package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RunningRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Two instances of the sample gateway with its "redis" profile, as docs/redis.md starts them, on
 * one real redis-server: bursts of 150 concurrent requests of one API key, spread over both, a
 * fresh key each time, 20 times. gpt-4o's budget is 3 a minute per key: exactly 3 pass every time.
 */
class SampleOnRedisTests {

  private static final int BURST = 150;
  private static final int REPETITIONS = 20;
  private static final int GPT_4O_LIMIT = 3;

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();
  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(10)).build();


  private static ConfigurableApplicationContext instance() {
    return new SpringApplicationBuilder(SampleGatewayApplication.class)
        .profiles("redis")
        .run("--server.port=0", "--management.server.port=0",
            "--spring.data.redis.port=" + REDIS.server().port(), "--spring.data.redis.host=127.0.0.1",
            "--ratelimiter.key-id-secret=sample-on-redis-test-secret",
            // the bursts are about the shared request window: lift the 2 calls in flight
            "--ratelimiter.policies.chat.concurrency.limit=1000");
  }

  private static int port(ConfigurableApplicationContext app) {
    return Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
  }

  @Test
  void twoInstancesAdmitExactlyTheLimitOfEveryBurst() {
    try (ConfigurableApplicationContext one = instance();
        ConfigurableApplicationContext two = instance()) {
      assertThat(one.getBean(RedisRateLimitStore.class)).isNotNull();
      List<Integer> ports = List.of(port(one), port(two));
      List<String> results = new ArrayList<>();
      for (int rep = 0; rep < REPETITIONS; rep++) {
        String key = "sk-sample-burst-" + rep + "-" + System.nanoTime();
        List<CompletableFuture<Integer>> calls = new ArrayList<>();
        for (int i = 0; i < BURST; i++) {
          HttpRequest request = HttpRequest.newBuilder(URI.create(
                  "http://127.0.0.1:" + ports.get(i % 2) + "/v1/chat/completions"))
              .header("Authorization", "Bearer " + key)
              .header("Content-Type", "application/json")
              .timeout(Duration.ofSeconds(30))
              .POST(HttpRequest.BodyPublishers.ofString(
                  "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello!\"}]}"))
              .build();
          calls.add(http.sendAsync(request, HttpResponse.BodyHandlers.discarding())
              .thenApply(HttpResponse::statusCode));
        }
        List<Integer> statuses =
            calls.stream().map(c -> c.orTimeout(60, TimeUnit.SECONDS).join()).toList();
        results.add("rep " + rep + ": 200=" + statuses.stream().filter(s -> s == 200).count()
            + " 429=" + statuses.stream().filter(s -> s == 429).count());
      }
      System.out.println(String.join("\n", results));
      assertThat(results).allSatisfy(r -> assertThat(r)
          .endsWith(": 200=" + GPT_4O_LIMIT + " 429=" + (BURST - GPT_4O_LIMIT)));
      assertThat(one.getBean(RedisRateLimitStore.class).errorCount()
          + two.getBean(RedisRateLimitStore.class).errorCount()).isZero();
    }
  }
}
