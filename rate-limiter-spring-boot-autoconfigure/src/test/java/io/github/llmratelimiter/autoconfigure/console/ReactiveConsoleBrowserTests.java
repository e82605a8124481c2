package io.github.llmratelimiter.autoconfigure.console;

import io.github.llmratelimiter.autoconfigure.stacks.WebStackScenarios;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The console in a browser on WebFlux (Netty): the scenario gateway with the console on, the
 * metrics exposed and the endpoint's write access granted; its calls go to {@code /v1/routed}
 * (3 a minute per key).
 */
class ReactiveConsoleBrowserTests extends ConsoleBrowserScenarios {

  private final HttpClient http = HttpClient.newHttpClient();
  private ConfigurableApplicationContext app;
  private int port;

  @BeforeAll
  void startApplication() {
    app = WebStackScenarios.start(WebApplicationType.REACTIVE, "ratelimiter.console.enabled=true",
        "ratelimiter.console.refresh=1s", "management.endpoints.web.exposure.include=ratelimiter,metrics",
        "management.endpoint.ratelimiter.access=unrestricted");
    port = WebStackScenarios.port(app);
  }

  @AfterAll
  void stopApplication() {
    if (app != null) {
      app.close();
    }
  }

  @Override
  protected String consoleUrl() {
    return "http://127.0.0.1:" + port + "/ratelimiter/console";
  }

  @Override
  protected int send(String apiKey) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/routed"))
        .header("Authorization", "Bearer " + apiKey).build(), HttpResponse.BodyHandlers.discarding())
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
