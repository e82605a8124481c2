package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.console.AbstractConsoleBrowserTests;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.WebElement;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The sample's console in a headless browser: the sample as configured (the console on the
 * management port, write access granted), refreshing every second; calls are chat completions for
 * gpt-4o (3 a minute per key). With {@code -Dconsole.screenshot=docs/console.png} it also puts the
 * sample under load from a dozen tenants for {@code console.screenshot.seconds} (default 60) and
 * writes the screenshot of docs/operations.md (docs/console.png).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "ratelimiter.console.refresh=1s")
class ConsoleBrowserTests extends AbstractConsoleBrowserTests {

  private static final String SCREENSHOT = "console.screenshot";

  @LocalServerPort
  int port;

  @LocalManagementPort
  int managementPort;

  @Autowired
  RateLimitEnforcer enforcer;

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @Override
  protected String consoleUrl() {
    return "http://127.0.0.1:" + managementPort + "/ratelimiter/console";
  }

  @Override
  protected int send(String apiKey) throws Exception {
    return chat(apiKey, "gpt-4o", 16);
  }

  private int chat(String apiKey, String model, int maxTokens) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
        .header("Content-Type", "application/json").header("Authorization", "Bearer " + apiKey)
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + model + "\",\"max_tokens\":" + maxTokens
            + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  @Override
  protected void track(int count, String prefix) {
    for (int i = 0; i < count; i++) {
      enforcer.acquire("chat", RateLimitKey.of(prefix + i, "gpt-4o-mini"), 1);
    }
  }

  @Test
  void theConsoleIsServedOnTheManagementPortOnly() throws Exception {
    assertThat(get(managementPort, "/ratelimiter/console").statusCode()).isEqualTo(200);
    assertThat(get(port, "/ratelimiter/console").statusCode()).isEqualTo(404);
    assertThat(get(port, "/ratelimiter/console/console.js").statusCode()).isEqualTo(404);
  }

  private HttpResponse<String> get(int toPort, String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + toPort + path))
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** Writes docs/console.png, the console under load; runs only when asked for. */
  @Test
  void screenshotUnderLoad() throws Exception {
    String file = System.getProperty(SCREENSHOT);
    Assumptions.assumeTrue(file != null && !file.isBlank(),
        "no screenshot asked for (-D" + SCREENSHOT + "=docs/console.png writes one)");
    Duration load = Duration.ofSeconds(Long.getLong(SCREENSHOT + ".seconds", 60));
    browser().driver().manage().window().setSize(new Dimension(1400, 1300));
    browser().open(consoleUrl());
    ScheduledExecutorService tenants = Executors.newScheduledThreadPool(4);
    String[] models = {"gpt-4o", "gpt-4o-mini"};
    for (int t = 0; t < 12; t++) {
      int tenant = t;
      // tenants of every temper: some calm, some bursting, some asking for many completion tokens
      long periodMs = 200L + 300L * (tenant % 4);
      tenants.scheduleAtFixedRate(() -> {
        try {
          chat("sk-demo-tenant-" + (1000 + tenant * 137), models[tenant % 2], tenant % 3 == 0 ? 200 : 16);
        } catch (Exception e) {
          // the next call tries again
        }
      }, tenant * 50L, periodMs, TimeUnit.MILLISECONDS);
    }
    try {
      // the screenshot is taken while the load goes on, near its end
      assertThat(tenants.awaitTermination(load.toMillis(), TimeUnit.MILLISECONDS)).isFalse();
      WebElement first = browser().await("a denied tenant in a table",
          d -> d.findElements(By.cssSelector("tbody tr.tenant.denied")).stream().findFirst().orElse(null));
      first.click();
      browser().await("the tenant's detail", d -> d.findElement(By.id("detail")).isDisplayed());
      browser().awaitFreshPoll();
      browser().screenshot(Path.of(file));
    } finally {
      tenants.shutdownNow();
    }
  }
}
