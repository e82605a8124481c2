package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * On WebFlux the limiter's filter finds the handler a route's request goes to before the
 * dispatcher does: the dispatcher takes an annotated controller's handler from it instead of
 * looking again, with the same path variables and body, whether its mapping answers at once or
 * later, and the mapping is asked in the request's Reactor context; a request no handler serves is not charged; a request a later filter rewrites, and a
 * router function (which keeps the request it was found with), are looked up again.
 */
class ReactiveHandlerLookupTests {

  private static ConfigurableApplicationContext app;
  private static WebTestClient client;

  @BeforeAll
  static void start() {
    app = AbstractWebStackScenarioTests.start(HandlerLookupApp.class, WebApplicationType.REACTIVE,
        HandlerLookupApp.PROPERTIES);
    client = WebTestClient.bindToServer()
        .baseUrl("http://localhost:" + AbstractWebStackScenarioTests.port(app))
        .responseTimeout(Duration.ofSeconds(30)).build();
  }

  @AfterAll
  static void stop() {
    app.close();
  }

  @BeforeEach
  void resetCount() {
    HandlerLookupApp.LOOKUPS.set(0);
    HandlerLookupApp.LOOKUPS_IN_CONTEXT.set(0);
  }

  private static EntityExchangeResult<String> post(String path, String... headers) {
    return client.post().uri(path).contentType(MediaType.APPLICATION_JSON)
        .header("Authorization", "Bearer sk-handler-lookup-0123456789")
        .headers(h -> {
          for (String name : headers) {
            h.add(name, "yes");
          }
        })
        .bodyValue("{\"model\":\"gpt-4o\"}").exchange()
        .expectBody(String.class).returnResult();
  }

  @Test
  void aControllersHandlerIsLookedUpOnceAndServesWithItsVariablesAndBody() {
    EntityExchangeResult<String> r = post("/echo/alice");

    assertThat(r.getStatus().value()).isEqualTo(200);
    assertThat(r.getResponseBody()).isEqualTo("alice:{\"model\":\"gpt-4o\"}");
    assertThat(r.getResponseHeaders().getFirst("RateLimit")).startsWith("\"chat\";");
    assertThat(HandlerLookupApp.LOOKUPS).hasValue(1);
  }

  @Test
  void theLimitersLookUpRunsInTheRequestsReactorContext() {
    for (String[] headers : new String[][] {{}, {"X-Later"}}) {
      HandlerLookupApp.LOOKUPS.set(0);
      HandlerLookupApp.LOOKUPS_IN_CONTEXT.set(0);

      assertThat(post("/echo/frank", headers).getStatus().value()).isEqualTo(200);
      assertThat(HandlerLookupApp.LOOKUPS).hasValue(1);
      assertThat(HandlerLookupApp.LOOKUPS_IN_CONTEXT).hasValue(1);
    }
  }

  @Test
  void aHandlerFoundLaterIsLookedUpOnceAndServesWithItsVariablesAndBody() {
    EntityExchangeResult<String> r = post("/echo/dave", "X-Later");

    assertThat(r.getStatus().value()).isEqualTo(200);
    assertThat(r.getResponseBody()).isEqualTo("dave:{\"model\":\"gpt-4o\"}");
    assertThat(r.getResponseHeaders().getFirst("RateLimit")).startsWith("\"chat\";");
    assertThat(HandlerLookupApp.LOOKUPS).hasValue(1);
  }

  @Test
  void aRequestNoHandlerServesIsNotChargedWhetherItsLookUpAnswersAtOnceOrLater() {
    for (String[] headers : new String[][] {{}, {"X-Later"}}) {
      EntityExchangeResult<String> r = post("/nowhere/erin", headers);

      assertThat(r.getStatus().value()).isEqualTo(404);
      assertThat(r.getResponseHeaders().getFirst("RateLimit")).isNull();
    }
  }

  @Test
  void aRequestALaterFilterRewritesIsLookedUpAgainAndServedAtItsNewPath() {
    EntityExchangeResult<String> r = post("/echo/bob", "X-Rename");

    assertThat(r.getStatus().value()).isEqualTo(200);
    assertThat(r.getResponseBody()).isEqualTo("renamed-bob:{\"model\":\"gpt-4o\"}");
    assertThat(HandlerLookupApp.LOOKUPS).hasValue(2);
  }

  @Test
  void aRouterFunctionReadsTheBodyTheLimiterRead() {
    EntityExchangeResult<String> r = post("/function/carol");

    assertThat(r.getStatus().value()).isEqualTo(200);
    assertThat(r.getResponseBody()).isEqualTo("carol:{\"model\":\"gpt-4o\"}");
    assertThat(r.getResponseHeaders().getFirst("RateLimit")).startsWith("\"chat\";");
  }
}
