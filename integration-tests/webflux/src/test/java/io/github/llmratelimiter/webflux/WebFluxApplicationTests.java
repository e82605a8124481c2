package io.github.llmratelimiter.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.Bursts;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.reactor.netty.NettyWebServer;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.util.ClassUtils;

/**
 * A WebFlux application with only spring-boot-starter-webflux, the starter and Actuator starts on
 * Netty, with nothing of the servlet stack (and no AspectJ) on its class path; it limits a
 * configured route and a {@code @RateLimited} handler returning {@code Mono}, answers a keyless
 * call with 401, lets a handler settle its model tokens itself, and a burst of 100 concurrent calls
 * of one key admits exactly the limit, on the in-memory store, without blocking an event loop.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WebFluxApplicationTests {

  private ConfigurableApplicationContext app;
  private WebTestClient client;

  @BeforeAll
  void start() {
    app = ChatGateway.start();
    client = WebTestClient.bindToServer().baseUrl("http://localhost:" + ChatGateway.port(app))
        .responseTimeout(Duration.ofSeconds(30)).build();
  }

  @AfterAll
  void stop() {
    app.close();
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "jakarta.servlet.Servlet",
      "org.springframework.web.servlet.DispatcherServlet",
      "org.apache.catalina.startup.Tomcat",
      "org.eclipse.jetty.server.Server",
      "io.undertow.Undertow",
      "org.aspectj.weaver.Advice"})
  void theClassPathHasNothingOfTheServletStack(String className) {
    assertThat(ClassUtils.isPresent(className, getClass().getClassLoader())).as(className).isFalse();
  }

  @Test
  void theApplicationRunsOnNetty() {
    assertThat(((WebServerApplicationContext) app).getWebServer()).isInstanceOf(NettyWebServer.class);
  }

  private WebTestClient.ResponseSpec chat(String key, String model) {
    return client.post().uri("/v1/chat/completions").header("Authorization", "Bearer " + key)
        .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"model\":\"" + model + "\"}").exchange();
  }

  @Test
  void aConfiguredRouteIsLimitedPerKeyAndModel() {
    String key = "sk-webflux-route-0123456789";
    for (int i = 2; i >= 0; i--) {
      chat(key, "gpt-4o").expectStatus().isOk()
          .expectHeader().valueEquals("RateLimit", "\"chat\";r=" + i + ";t=60")
          .expectBody(String.class).isEqualTo("{\"model\":\"gpt-4o\"}");
    }
    chat(key, "gpt-4o").expectStatus().isEqualTo(429)
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .expectHeader().valueEquals("Retry-After", "60") // real time: retry-after-ms is up to 60000
        .expectHeader().exists("retry-after-ms")
        .expectBody().jsonPath("$.reason").isEqualTo("RPM_LIMIT").jsonPath("$.policy").isEqualTo("chat");
    chat(key, "gpt-4o-mini").expectStatus().isOk(); // another model, another budget
  }

  @Test
  void anAnnotatedMonoHandlerIsLimited() {
    String key = "sk-webflux-annotated-0123456789";
    client.get().uri("/embeddings").header("X-API-Key", key).exchange().expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"embeddings\";q=2;w=60");
    client.get().uri("/embeddings").header("X-API-Key", key).exchange().expectStatus().isOk();
    client.get().uri("/embeddings").header("X-API-Key", key).exchange().expectStatus().isEqualTo(429)
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "0")
        .expectHeader().valueEquals("Retry-After", "60")
        .expectBody().jsonPath("$.policy").isEqualTo("embeddings").jsonPath("$.status").isEqualTo(429);
  }

  @Test
  void aKeylessCallGets401() {
    client.post().uri("/v1/chat/completions").contentType(MediaType.APPLICATION_JSON)
        .bodyValue("{\"model\":\"gpt-4o\"}").exchange()
        .expectStatus().isUnauthorized()
        .expectHeader().valueEquals("WWW-Authenticate", "Bearer")
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
  }

  @Test
  void aBurstOf100ConcurrentCallsOfOneKeyAdmitsExactlyTheLimit() {
    // one call first: the handler's JSON decoder builds its deserializer once, under a lock of
    // Jackson's that concurrent first calls would wait on (the application's, not the limiter's)
    chat("sk-webflux-warm-up-0123456789", "gpt-4o").expectStatus().isOk();
    for (int rep = 0; rep < 5; rep++) {
      List<Integer> statuses =
          Bursts.statuses(ChatGateway.port(app), "sk-webflux-burst-" + rep + "-0123456789", 100);
      assertThat(statuses).filteredOn(s -> s == 200).hasSize(3);
      assertThat(statuses).filteredOn(s -> s == 429).hasSize(97);
    }
  }

  @Test
  void aHandlerSettlesItsModelTokensItselfWithoutBlocking() {
    String key = "sk-webflux-self-settled-0123456789";
    // 20 model tokens estimated (3 + 4 + ceil(12 / 4) + max_tokens 10); the handler settles 7
    client.post().uri("/llm/self-settled?usage=7").header("X-API-Key", key)
        .contentType(MediaType.APPLICATION_JSON)
        .bodyValue("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
            + "\"abcdefgh\"}],\"max_tokens\":10}")
        .exchange().expectStatus().isOk()
        .expectHeader().valueEquals("x-ratelimit-remaining-tokens", "80");
    RateLimitPolicy llm = app.getBean(RateLimitPolicies.class).policy("llm");
    RateLimitKey limited = RateLimitKey.of(key, null);
    // the body's own usage (50) was not read over the handler's settlement
    assertThat(app.getBean(RateLimitStore.class)
        .administration().orElseThrow()
            .inspect(llm.budgets(limited).get(0), llm.keys(limited).get(0))
        .map(KeySnapshot::modelTokensUsed)).hasValue(7L);
  }

  @Test
  void theActuatorEndpointShowsTheKeysBudgetsWithoutTheKey() {
    String key = "sk-webflux-actuator-0123456789";
    chat(key, "gpt-4o").expectStatus().isOk();
    String body = client.get().uri("/actuator/ratelimiter/" + key).exchange().expectStatus().isOk()
        .expectBody(String.class).returnResult().getResponseBody();
    assertThat(JsonPath.<List<Integer>>read(body, "$.budgets[?(@.budget=='chat')].windowUsed"))
        .containsExactly(1);
    assertThat(body).doesNotContain(key);
  }
}
