package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.console.ConsoleBrowser;
import io.github.llmratelimiter.redis.RunningRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The sample's console on its "redis" profile, in a headless browser: the store's badge says Redis
 * answers and the failure policy is idle; the tables list the busiest keys by the store's hash,
 * with no id to act on and never the key; when redis-server stops, the badge turns to the
 * degraded state while the gateway goes on answering.
 */
class ConsoleOnRedisBrowserTests {

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @Test
  void theStoreBadgeFollowsRedisAndKeysStayHashed() throws Exception {
    try (ConfigurableApplicationContext app = new SpringApplicationBuilder(SampleGatewayApplication.class)
        .profiles("redis")
        .run("--server.port=0", "--management.server.port=0", "--ratelimiter.console.refresh=1s",
            "--spring.data.redis.port=" + REDIS.server().port(), "--spring.data.redis.host=127.0.0.1",
            "--ratelimiter.key-id-secret=console-on-redis-test-secret");
        ConsoleBrowser browser = ConsoleBrowser.start()) {
      int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
      int management = Integer.parseInt(app.getEnvironment().getProperty("local.management.port"));
      String key = "sk-console-on-redis-7e57";
      for (int i = 0; i < 4; i++) {
        chat(port, key);
      }
      browser.open("http://127.0.0.1:" + management + "/ratelimiter/console");
      browser.await("the Redis badge, up", d -> "up".equals(d.findElement(By.id("store")).getDomAttribute("data-state")));
      assertThat(browser.text(By.id("store"))).startsWith("Store: Redis").contains("not degraded", "failed calls");
      List<ConsoleBrowser.Row> rows = browser.await("the hashed keys",
          d -> browser.tables().values().stream().flatMap(List::stream).toList().isEmpty() ? null
              : browser.tables().values().stream().flatMap(List::stream).toList());
      assertThat(rows).allSatisfy(r -> {
        assertThat(r.key()).startsWith("#").hasSize(23);
        assertThat(r.id()).isNull();
      });
      assertThat(browser.driver().getPageSource()).doesNotContain(key.substring(0, key.length() - 4));

      REDIS.server().stop();
      chat(port, key);
      browser.await("the Redis badge, degraded", d -> List.of("degraded", "down")
          .contains(d.findElement(By.id("store")).getDomAttribute("data-state")));
      assertThat(browser.text(By.id("store"))).startsWith("Store: Redis").contains("DEGRADED");
    }
  }

  private int chat(int port, String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
        .header("Content-Type", "application/json").header("Authorization", "Bearer " + key)
        .timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(
            "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
        .build(), HttpResponse.BodyHandlers.discarding()).statusCode();
  }
}
