package io.github.llmratelimiter.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.stacks.AbstractWebStackScenarioTests;
import io.github.llmratelimiter.autoconfigure.stacks.UpstreamApp;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The console's upstream panel in a browser: each configured upstream's row shows what its window
 * admits and, once its provider reported 0 requests left, that the upstream is closed.
 */
class ConsoleUpstreamBrowserTests {

  @Test
  void theUpstreamRowShowsItsWindowAndThatTheProviderClosedIt() throws Exception {
    String[] properties = Stream.concat(Stream.of(UpstreamApp.PROPERTIES),
        Stream.of("ratelimiter.console.enabled=true", "ratelimiter.console.refresh=1s"))
        .toArray(String[]::new);
    try (ConfigurableApplicationContext app = AbstractWebStackScenarioTests.start(UpstreamApp.class,
            WebApplicationType.SERVLET, properties);
        ConsoleBrowser browser = ConsoleBrowser.start()) {
      int port = AbstractWebStackScenarioTests.port(app);
      String query = Stream.of("x-ratelimit-remaining-requests:0", "x-ratelimit-reset-requests:90s")
          .map(h -> "h=" + URLEncoder.encode(h, StandardCharsets.UTF_8))
          .reduce((a, b) -> a + "&" + b).orElseThrow();
      HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + port + "/v1/chat/completions?" + query))
          .header("Authorization", "Bearer sk-console-upstream-0001")
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"gpt-4o\",\"messages\":[]}"))
          .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(app.getBean(UpstreamApp.Reports.class).statuses.poll(10, TimeUnit.SECONDS))
          .isEqualTo(200);

      browser.open("http://127.0.0.1:" + port + "/ratelimiter/console");
      WebElement row = browser.await("the upstream's closed row", d -> d.findElements(
              By.cssSelector("#upstreams tr.upstream[data-upstream='openai-main']")).stream()
          .filter(e -> !"0".equals(e.getAttribute("data-closed-ms"))).findFirst().orElse(null));
      assertThat(browser.driver().findElement(By.id("upstreams-panel")).isDisplayed()).isTrue();
      assertThat(row.getText()).contains("openai-main", "99 of 100 left", "0 requests",
          "closed for 1 min 30 s");
    }
  }
}
