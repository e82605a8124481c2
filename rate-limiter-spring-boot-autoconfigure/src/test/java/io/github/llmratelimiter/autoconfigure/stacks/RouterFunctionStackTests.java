package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * A path served both by a {@code RouterFunction} and by a {@code @RateLimited} controller method,
 * and covered by a route, on each stack: whichever handler the dispatcher picks, the request is
 * charged exactly once, by the declaration of the handler that serves it (the annotation for the
 * controller, the route for the function), never by neither.
 */
class RouterFunctionStackTests {

  @ParameterizedTest
  @EnumSource(names = {"SERVLET", "REACTIVE"})
  void theHandlerTheDispatcherPicksDecidesWhichDeclarationCharges(WebApplicationType stack) {
    try (ConfigurableApplicationContext app =
        AbstractWebStackScenarioTests.start(RouterFunctionApp.class, stack, RouterFunctionApp.PROPERTIES)) {
      WebTestClient client = WebTestClient.bindToServer()
          .baseUrl("http://localhost:" + AbstractWebStackScenarioTests.port(app))
          .responseTimeout(Duration.ofSeconds(30)).build();
      List<Integer> statuses = new ArrayList<>();
      List<String> served = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        EntityExchangeResult<String> r = client.get().uri("/both")
            .header("Authorization", "Bearer sk-router-function-0123456789").exchange()
            .expectBody(String.class).returnResult();
        statuses.add(r.getStatus().value());
        served.add(r.getStatus().value() == 200 ? r.getResponseBody() : null);
        if (r.getStatus().value() == 200) {
          String policy = "function".equals(r.getResponseBody()) ? "routed" : "annotated";
          assertThat(r.getResponseHeaders().getFirst("RateLimit")).startsWith("\"" + policy + "\";");
        }
      }
      // both dispatchers ask their router functions first: the function serves, so the route
      // charges it (limit 1), and the controller's annotation does not leave it uncharged
      assertThat(served).containsExactly("function", null, null);
      assertThat(statuses).containsExactly(200, 429, 429);
    }
  }
}
