package io.github.llmratelimiter.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.stacks.AbstractWebStackScenarioTests;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The console in a browser on WebFlux (Netty): the scenario gateway with the console on, the
 * metrics exposed and the endpoint's write access granted; its calls go to {@code /v1/routed}
 * (3 a minute per key). Besides the shared scenarios: a model name a client makes up, markup
 * included, shows as text and runs nothing.
 */
class ReactiveConsoleBrowserTests extends AbstractConsoleBrowserTests {

  private final HttpClient http = HttpClient.newHttpClient();
  private ConfigurableApplicationContext app;
  private int port;

  @BeforeAll
  void startApplication() {
    app = AbstractWebStackScenarioTests.start(WebApplicationType.REACTIVE, "ratelimiter.console.enabled=true",
        "ratelimiter.console.refresh=1s", "management.endpoints.web.exposure.include=ratelimiter,metrics",
        "management.endpoint.ratelimiter.access=unrestricted");
    port = AbstractWebStackScenarioTests.port(app);
  }

  @AfterAll
  void stopApplication() {
    if (app != null) {
      app.close();
    }
  }

  @Test
  void aModelNameWithMarkupShowsAsTextAndRunsNothing() throws Exception {
    String model = "<img src=x id=injected onerror=\"document.body.dataset.pwned='yes'\">";
    HttpResponse<String> sent = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat"))
        .header("Authorization", "Bearer sk-console-markup-tenant-3c3c").header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + model.replace("\"", "\\\"") + "\"}"))
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(sent.statusCode()).as(sent.body()).isEqualTo(200);
    browser().open(consoleUrl());
    browser().await("the made-up model in a row", d -> browser().tables().values().stream()
        .flatMap(List::stream).anyMatch(r -> r.text().contains(model)) ? true : null);
    browser().awaitFreshPoll();
    assertThat(browser().driver().findElements(By.id("injected"))).isEmpty();
    assertThat(browser().bodyData()).doesNotContainKey("pwned");
  }

  @Override
  protected String consoleUrl() {
    return "http://127.0.0.1:" + port + "/ratelimiter/console";
  }

  @Override
  protected int send(String apiKey) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/routed"))
        .header("Authorization", "Bearer " + apiKey)
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  @Override
  protected void track(int count, String prefix) {
    RateLimitEnforcer enforcer = app.getBean(RateLimitEnforcer.class);
    for (int i = 0; i < count; i++) {
      enforcer.acquire("routed", RateLimitKey.of(prefix + i, null), 1);
    }
  }
}
