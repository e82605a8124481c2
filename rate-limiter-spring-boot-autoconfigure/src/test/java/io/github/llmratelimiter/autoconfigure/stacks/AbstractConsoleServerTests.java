package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.autoconfigure.RawHttp;
import io.github.llmratelimiter.autoconfigure.RawHttp.Response;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The operator's console in applications of their own, on each web stack (a subclass names it):
 * off by default and wherever the endpoint is not exposed over HTTP; on the management server,
 * under its base path, with the endpoint's write access, when the management port is set apart;
 * an out-of-range refresh stops start-up naming the property. (The page itself is one of {@link
 * AbstractWebStackScenarioTests}; these start applications of their own, which on WebFlux must not run beside
 * that class's shared one: closing a Netty application disposes the event loops they share.)
 */
public abstract class AbstractConsoleServerTests {

  private static final String CONSOLE = "ratelimiter.console.enabled=true";

  /**
   * Returns the stack the applications run on.
   *
   * @return the web application type
   */
  protected abstract WebApplicationType stack();

  @Test
  void consoleIsOffByDefaultAndWhereverTheEndpointIsNotExposed() throws Exception {
    for (String[] properties : List.of(new String[0],
        new String[] {CONSOLE, "management.endpoints.web.exposure.exclude=ratelimiter"},
        new String[] {CONSOLE, "management.endpoint.ratelimiter.access=none"})) {
      try (ConfigurableApplicationContext other = AbstractWebStackScenarioTests.start(stack(), properties)) {
        for (String path : List.of("/ratelimiter/console", "/ratelimiter/console/console.js")) {
          Response response = RawHttp.send(AbstractWebStackScenarioTests.port(other), "GET " + path + " HTTP/1.1", List.of(), new byte[0]);
          assertThat(response.status()).as("%s with %s", path, Arrays.toString(properties)).isEqualTo(404);
          assertThat(response.body()).doesNotContain("use strict", "data-endpoint");
        }
      }
    }
  }

  @Test
  void consoleLivesOnTheManagementServerAndKnowsTheEndpointsThereAndItsWriteAccess() throws Exception {
    // (overriding: where Tomcat and Netty are both on the class path, both define the reactive
    // management server's factory)
    try (ConfigurableApplicationContext other = AbstractWebStackScenarioTests.start(stack(), CONSOLE, "management.server.port=0",
        "spring.main.allow-bean-definition-overriding=true", "management.server.base-path=/manage", "management.endpoints.web.exposure.include=metrics,health",
        "management.endpoint.ratelimiter.access=unrestricted", "ratelimiter.console.refresh=1500ms")) {
      int management = Integer.parseInt(other.getEnvironment().getProperty("local.management.port"));
      assertThat(management).isNotEqualTo(AbstractWebStackScenarioTests.port(other));
      assertThat(RawHttp.send(AbstractWebStackScenarioTests.port(other), "GET /ratelimiter/console HTTP/1.1", List.of(), new byte[0]).status())
          .as("the application's port").isEqualTo(404);
      Response page = RawHttp.send(management, "GET /manage/ratelimiter/console HTTP/1.1", List.of(), new byte[0]);
      assertThat(page.status()).isEqualTo(200);
      assertThat(page.body()).contains("src=\"/manage/ratelimiter/console/console.js\"",
          "data-endpoint=\"/manage/actuator/ratelimiter\"", "data-metrics=\"/manage/actuator/metrics\"",
          "data-health=\"/manage/actuator/health\"", "data-reset=\"true\"", "data-refresh=\"1500\"");
      assertThat(RawHttp.send(management, "GET /manage/ratelimiter/console/console.js HTTP/1.1", List.of(),
          new byte[0]).status()).isEqualTo(200);
    }
  }

  @Test
  void consoleRefreshOutOfRangeFailsStartupNamingTheProperty() {
    for (String refresh : List.of("100ms", "2m", "-1s")) {
      assertThatThrownBy(() -> AbstractWebStackScenarioTests.start(stack(), CONSOLE, "ratelimiter.console.refresh=" + refresh).close())
          .as(refresh)
          .hasStackTraceContaining("ratelimiter.console.refresh");
    }
  }
}
