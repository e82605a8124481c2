package io.github.llmratelimiter.autoconfigure.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RedisServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * Bursts of one key against real gateway applications (Tomcat on a random port) on one real
 * redis-server, with the Redis store's default settings: 200 concurrent requests, a fresh key per
 * repetition, 20 repetitions, and exactly the limit passes every time, with one application and
 * with two sharing the Redis.
 */
class RedisBurstTests {

  private static final int LIMIT = 3;
  private static final int BURST = 200;
  private static final int REPETITIONS = 20;

  private static RedisServer server;
  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(10)).build();

  @BeforeAll
  static void startRedis() {
    server = RedisServer.start();
  }

  @AfterAll
  static void stopRedis() {
    server.close();
  }

  /** A gateway with one chat route limited per API key and model, every Redis setting default. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class Gateway {

    @RestController
    static class Chat {
      @PostMapping("/v1/chat/completions")
      Map<String, Object> chat(@RequestBody Map<String, Object> body) {
        return Map.of("model", body.getOrDefault("model", "none"));
      }
    }
  }

  private static ConfigurableApplicationContext start(String prefix) {
    return new SpringApplicationBuilder(Gateway.class).run(
        "--server.port=0",
        "--spring.data.redis.host=127.0.0.1",
        "--spring.data.redis.port=" + server.port(),
        "--ratelimiter.store=redis",
        "--ratelimiter.redis.key-prefix=" + prefix,
        "--ratelimiter.policies.chat.scope=api-key-and-model",
        "--ratelimiter.policies.chat.rpm.limit=" + LIMIT,
        "--ratelimiter.web.routes[0].include=/v1/chat/**",
        "--ratelimiter.web.routes[0].policy=chat",
        "--management.health.redis.enabled=false");
  }

  private static int port(ConfigurableApplicationContext context) {
    return Integer.parseInt(context.getEnvironment().getProperty("local.server.port"));
  }

  @Test
  void oneApplicationAdmitsExactlyTheLimitOfEveryBurst() {
    try (ConfigurableApplicationContext app = start("burst1-" + System.nanoTime())) {
      bursts(List.of(port(app)), List.of(app));
    }
  }

  @Test
  void twoApplicationsSharingOneRedisAdmitExactlyTheLimitOfEveryBurst() {
    String prefix = "burst2-" + System.nanoTime();
    try (ConfigurableApplicationContext one = start(prefix);
        ConfigurableApplicationContext two = start(prefix)) {
      bursts(List.of(port(one), port(two)), List.of(one, two));
    }
  }

  private void bursts(List<Integer> ports, List<ConfigurableApplicationContext> apps) {
    List<String> results = new ArrayList<>();
    for (int rep = 0; rep < REPETITIONS; rep++) {
      String key = "sk-burst-" + rep + "-" + System.nanoTime();
      List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
      for (int i = 0; i < BURST; i++) {
        HttpRequest request = HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + ports.get(i % ports.size()) + "/v1/chat/completions"))
            .header("Authorization", "Bearer " + key)
            .header("Content-Type", "application/json")
            .timeout(Duration.ofSeconds(30))
            .POST(HttpRequest.BodyPublishers.ofString(
                "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
            .build();
        calls.add(http.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
      }
      int ok = 0;
      int limited = 0;
      int other = 0;
      for (CompletableFuture<HttpResponse<String>> call : calls) {
        int status = call.orTimeout(60, TimeUnit.SECONDS).join().statusCode();
        if (status == 200) {
          ok++;
        } else if (status == 429) {
          limited++;
        } else {
          other++;
        }
      }
      long errors = apps.stream()
          .mapToLong(a -> a.getBean(RedisRateLimitStore.class).errorCount()).sum();
      results.add("rep " + rep + ": ok=" + ok + " limited=" + limited + " other=" + other
          + " storeErrors=" + errors);
    }
    System.out.println(String.join("\n", results));
    assertThat(results).allSatisfy(r -> assertThat(r).contains("ok=" + LIMIT + " ", "other=0 "));
  }
}
