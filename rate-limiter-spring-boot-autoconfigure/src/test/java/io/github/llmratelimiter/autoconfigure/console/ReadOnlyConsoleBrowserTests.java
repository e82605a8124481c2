package io.github.llmratelimiter.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.stacks.AbstractWebStackScenarioTests;
import io.github.llmratelimiter.gateway.internal.KeyMasking;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The console in a browser where the endpoint keeps its default, read-only access (Spring MVC): a
 * tenant's detail shows, and no action is offered.
 */
class ReadOnlyConsoleBrowserTests {

  @Test
  void aReadOnlyEndpointGetsADetailWithoutActions() throws Exception {
    try (ConfigurableApplicationContext app = AbstractWebStackScenarioTests.start(WebApplicationType.SERVLET,
        "ratelimiter.console.enabled=true", "ratelimiter.console.refresh=1s");
        ConsoleBrowser browser = ConsoleBrowser.start()) {
      int port = AbstractWebStackScenarioTests.port(app);
      String key = "sk-console-read-only-tenant-4d4d";
      HttpClient http = HttpClient.newHttpClient();
      assertThat(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/routed"))
          .header("Authorization", "Bearer " + key)
          .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.discarding()).statusCode())
          .isEqualTo(200);
      browser.open("http://127.0.0.1:" + port + "/ratelimiter/console");
      assertThat(browser.bodyData()).containsEntry("reset", "false").containsEntry("assign", "false");
      String id = browser.await("the tenant's row", d -> browser.tables().values().stream().flatMap(List::stream)
          .filter(r -> KeyMasking.mask(key).equals(r.key())).map(ConsoleBrowser.Row::id).findFirst().orElse(null));
      browser.click(By.cssSelector("tr.tenant[data-id='" + id + "']"));
      browser.await("the tenant's detail", d -> KeyMasking.mask(key).equals(browser.text(By.id("detail-key"))));
      assertThat(browser.driver().findElement(By.id("reset")).isDisplayed()).as("the reset").isFalse();
      assertThat(browser.driver().findElement(By.id("plan-form")).isDisplayed()).as("the plan form").isFalse();
      assertThat(browser.text(By.id("chart-note"))).contains("metrics endpoint is not exposed");
    }
  }
}
