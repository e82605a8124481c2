package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.autoconfigure.Bursts;
import io.github.llmratelimiter.autoconfigure.Bursts.Answer;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * Real gateway applications (Tomcat on a random port, every auto-configuration of the test class
 * path) on one redis-server, with one chat route limited per API key and model and every Redis
 * setting at its default unless a test passes its own; and a client that sends them bursts.
 */
final class RedisGateways {

  static final int LIMIT = 3;
  static final String MODEL = Bursts.MODEL;

  private RedisGateways() {}

  /** The gateway application. */
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

  /** Starts a gateway on {@code server} under {@code prefix}, with extra {@code --name=value}s. */
  static ConfigurableApplicationContext start(RedisServer server, String prefix, String... extra) {
    return start(new Class<?>[0], server, prefix, extra);
  }

  /** Starts a gateway with more configuration classes (beans of a test's own). */
  static ConfigurableApplicationContext start(Class<?>[] sources, RedisServer server, String prefix,
      String... extra) {
    List<String> args = new ArrayList<>(List.of(
        "--server.port=0",
        "--spring.data.redis.host=127.0.0.1",
        "--spring.data.redis.port=" + server.port(),
        "--ratelimiter.store=redis",
        "--ratelimiter.redis.key-prefix=" + prefix,
        "--ratelimiter.policies.chat.scope=api-key-and-model",
        "--ratelimiter.policies.chat.rpm.limit=" + LIMIT,
        "--ratelimiter.web.routes[0].include=/v1/chat/**",
        "--ratelimiter.web.routes[0].policy=chat",
        "--management.health.redis.enabled=false"));
    args.addAll(List.of(extra));
    return new SpringApplicationBuilder(Gateway.class).sources(sources).run(args.toArray(String[]::new));
  }

  static int port(ConfigurableApplicationContext app) {
    return Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
  }

  static RedisRateLimitStore store(ConfigurableApplicationContext app) {
    return app.getBean(RedisRateLimitStore.class);
  }

  /**
   * Sends {@code count} concurrent chat requests of one API key, spread over the applications in
   * turn, and returns each answer.
   */
  static List<Answer> burst(List<ConfigurableApplicationContext> apps, String apiKey, int count) {
    return Bursts.burst(apps.stream().map(RedisGateways::port).toList(), apiKey, count);
  }

  /** The window used by {@code apiKey} on the chat policy's gpt-4o level, as Redis holds it. */
  static long windowUsed(ConfigurableApplicationContext app, String apiKey) {
    RateLimitPolicy chat = app.getBean(RateLimitPolicies.class).policy("chat");
    RateLimitKey key = RateLimitKey.of(apiKey, MODEL);
    return store(app).administration().orElseThrow()
        .inspect(chat.budgets(key).get(0), chat.keys(key).get(0))
        .map(KeySnapshot::windowUsed).orElse(0L);
  }
}
