package io.github.llmratelimiter.autoconfigure.stacks;

import static io.github.llmratelimiter.autoconfigure.RawHttp.header;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.RawHttp.Header;
import io.github.llmratelimiter.autoconfigure.RawHttp.Response;
import io.github.llmratelimiter.autoconfigure.RawHttp.StreamStart;
import io.github.llmratelimiter.autoconfigure.RawHttp;
import io.github.llmratelimiter.autoconfigure.Reconciliations.Settled;
import io.github.llmratelimiter.autoconfigure.Reconciliations;
import io.github.llmratelimiter.autoconfigure.stacks.ScenarioApp.StreamGates;
import io.github.llmratelimiter.autoconfigure.tokens.TokenGateway;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * One list of HTTP scenarios that every web stack must pass alike, against a real server on a random
 * port ({@link ScenarioApp}): a subclass starts the application on its stack. Route limits and
 * their headers, the exact bytes of the 429, 401, 400 and 413 problem bodies, annotated handlers
 * that return {@code Mono} and {@code Flux} (charged on subscription, a deny rendered as the same
 * 429), the model read from the body, the query or a form, bodies the limiter rejects, and model
 * tokens reconciled from a JSON body or a stream, refunded on an upstream error, kept on a client's
 * cancel. Each scenario uses API keys of its own; time moves only when a scenario moves it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class WebStackScenarios {

  private static final AtomicLong KEYS = new AtomicLong();
  private static final String JSON = "application/json";

  /** The 401 body, byte for byte, on every stack. */
  static final String MISSING_KEY_BODY = "{\"detail\":\"The request carries no API key: send "
      + "'Authorization: Bearer <key>' or 'X-API-Key: <key>'.\",\"instance\":\"/v1/routed\","
      + "\"status\":401,\"title\":\"Unauthorized\"}";

  private ConfigurableApplicationContext app;
  private int port;
  private WebTestClient client;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  /**
   * Returns the stack the application runs on.
   *
   * @return the web application type
   */
  protected abstract WebApplicationType stack();

  /**
   * Starts the scenario application on a stack, on a random port.
   *
   * @param stack the stack
   * @param extra more properties, {@code name=value}
   * @return the running application
   */
  public static ConfigurableApplicationContext start(WebApplicationType stack, String... extra) {
    List<String> args = new ArrayList<>(List.of("--server.port=0"));
    Stream.concat(Arrays.stream(ScenarioApp.PROPERTIES), Arrays.stream(extra))
        .forEach(p -> args.add("--" + p));
    return new SpringApplicationBuilder(ScenarioApp.class).web(stack).run(args.toArray(String[]::new));
  }

  /**
   * Returns the port an application listens on.
   *
   * @param app the application
   * @return its port
   */
  public static int port(ConfigurableApplicationContext app) {
    return Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
  }

  @BeforeAll
  void startApplication() {
    app = start(stack());
    port = port(app);
    client = WebTestClient.bindToServer().baseUrl("http://localhost:" + port)
        .responseTimeout(Duration.ofSeconds(30)).build();
  }

  @AfterAll
  void stopApplication() {
    if (app != null) {
      app.close();
    }
  }

  @BeforeEach
  void forgetEarlierReconciliations() {
    app.getBean(Reconciliations.class).clear();
  }

  /**
   * Returns the running application.
   *
   * @return the application
   */
  protected ConfigurableApplicationContext app() {
    return app;
  }

  /** A fresh API key, never seen by the application. */
  private static String newKey() {
    return "sk-scenario-" + KEYS.incrementAndGet() + "-0123456789";
  }

  private long windowUsed(String policy, String apiKey, String model) {
    RateLimitPolicy p = app.getBean(RateLimitPolicies.class).policy(policy);
    RateLimitKey key = RateLimitKey.of(apiKey, model);
    RateLimitStore store = app.getBean(RateLimitStore.class);
    long used = 0;
    for (int i = 0; i < p.levels().size(); i++) {
      used += store.inspect(p.budgets(key).get(i), p.keys(key).get(i))
          .map(KeySnapshot::windowUsed).orElse(0L);
    }
    return used;
  }

  private long modelTokensUsed(String apiKey) {
    RateLimitPolicy p = app.getBean(RateLimitPolicies.class).policy("llm");
    RateLimitKey key = RateLimitKey.of(apiKey, null);
    return app.getBean(RateLimitStore.class).inspect(p.budgets(key).get(0), p.keys(key).get(0))
        .map(KeySnapshot::modelTokensUsed).orElse(0L);
  }

  private Settled nextSettlement() throws InterruptedException {
    return app.getBean(Reconciliations.class).next();
  }

  private WebTestClient.ResponseSpec get(String path, String apiKey) {
    return client.get().uri(path).header("Authorization", "Bearer " + apiKey).exchange();
  }

  private WebTestClient.ResponseSpec postJson(String path, String apiKey, String body) {
    return client.post().uri(path).header("X-API-Key", apiKey)
        .contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
  }

  private static String body(WebTestClient.ResponseSpec response) {
    byte[] bytes = response.expectBody().returnResult().getResponseBodyContent();
    return bytes == null ? "" : new String(bytes, StandardCharsets.UTF_8);
  }

  private Response raw(String requestLine, byte[] body, Header... headers) throws Exception {
    return RawHttp.send(port, requestLine, List.of(headers), body);
  }

  // ---- route limits and headers

  @Test
  void allowedResponsesCarryRateLimitHeaders() {
    get("/v1/routed", newKey())
        .expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"routed\";q=3;w=60")
        .expectHeader().valueEquals("RateLimit", "\"routed\";r=2;t=60")
        .expectHeader().valueEquals("x-ratelimit-limit-requests", "3")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "2")
        .expectHeader().valueEquals("x-ratelimit-reset-requests", "1m0s")
        .expectHeader().doesNotExist("Retry-After")
        .expectHeader().doesNotExist("retry-after-ms");
  }

  @Test
  void requestCrossingTheLimitGets429WithExactBytesAndHeaders() {
    String key = newKey();
    for (int i = 2; i >= 0; i--) {
      get("/v1/routed", key).expectStatus().isOk()
          .expectHeader().valueEquals("x-ratelimit-remaining-requests", Integer.toString(i));
    }
    WebTestClient.ResponseSpec denied = get("/v1/routed", key)
        .expectStatus().isEqualTo(429)
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .expectHeader().valueEquals("Retry-After", "60")
        .expectHeader().valueEquals("retry-after-ms", "60000")
        .expectHeader().valueEquals("RateLimit-Policy", "\"routed\";q=3;w=60")
        .expectHeader().valueEquals("RateLimit", "\"routed\";r=0;t=60")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "0");
    assertThat(body(denied)).isEqualTo("{\"detail\":\"Rate limit exceeded for policy 'routed' "
        + "(RPM_LIMIT on level 'routed'). Retry after 60000 ms.\",\"instance\":\"/v1/routed\","
        + "\"status\":429,\"title\":\"Too Many Requests\","
        + "\"type\":\"urn:llmratelimiter:problem:rate-limited\",\"reason\":\"RPM_LIMIT\","
        + "\"policy\":\"routed\",\"level\":\"routed\",\"retryable\":true,\"retryAfterMs\":60000}");
  }

  @Test
  void excludedPathIsNotLimited() {
    String key = newKey();
    for (int i = 0; i < 5; i++) {
      get("/v1/free", key).expectStatus().isOk().expectHeader().doesNotExist("RateLimit");
    }
  }

  @Test
  void retryAfterIsRoundedUpAndWaitingTheAdvertisedTimeClearsTheDeny() {
    String key = newKey();
    get("/v1/bursty", key).expectStatus().isOk();
    get("/v1/bursty", key).expectStatus().isEqualTo(429)
        .expectHeader().valueEquals("Retry-After", "1")
        .expectHeader().valueEquals("retry-after-ms", "250");
    ManualTicker ticker = app.getBean(ManualTicker.class);
    ticker.advance(Duration.ofMillis(249));
    get("/v1/bursty", key).expectStatus().isEqualTo(429);
    ticker.advance(Duration.ofMillis(1));
    get("/v1/bursty", key).expectStatus().isOk();
  }

  @Test
  void denyThatWaitingCannotClearHasNoRetryAfterAndSaysSo() {
    String key = newKey();
    get("/v1/final", key).expectStatus().isOk();
    WebTestClient.ResponseSpec denied = get("/v1/final", key).expectStatus().isEqualTo(429)
        .expectHeader().doesNotExist("Retry-After")
        .expectHeader().doesNotExist("retry-after-ms");
    assertThat(body(denied)).contains("\"reason\":\"BURST_LIMIT\"", "\"retryable\":false",
        "Waiting will not clear this limit").doesNotContain("retryAfterMs");
  }

  // ---- @RateLimited handlers returning Mono and Flux

  @Test
  void annotatedMonoHandlerIsChargedOnSubscriptionAndItsDenyIsThe429Problem() {
    String key = newKey();
    get("/annotated", key).expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit", "\"annotated\";r=1;t=60")
        .expectBody(String.class).isEqualTo("annotated");
    get("/annotated", key).expectStatus().isOk();
    WebTestClient.ResponseSpec denied = get("/annotated", key).expectStatus().isEqualTo(429)
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .expectHeader().valueEquals("Retry-After", "60")
        .expectHeader().valueEquals("RateLimit-Policy", "\"annotated\";q=2;w=60")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "0");
    assertThat(body(denied)).isEqualTo("{\"detail\":\"Rate limit exceeded for policy 'annotated' "
        + "(RPM_LIMIT on level 'annotated'). Retry after 60000 ms.\",\"instance\":\"/annotated\","
        + "\"status\":429,\"title\":\"Too Many Requests\","
        + "\"type\":\"urn:llmratelimiter:problem:rate-limited\",\"reason\":\"RPM_LIMIT\","
        + "\"policy\":\"annotated\",\"level\":\"annotated\",\"retryable\":true,"
        + "\"retryAfterMs\":60000}");
  }

  @Test
  void annotatedFluxHandlerStreamsWhenAdmittedAndAnswersTheDenyBeforeItsFirstEvent() {
    String key = newKey();
    for (int i = 1; i >= 0; i--) {
      WebTestClient.ResponseSpec ok = get("/annotated/flux", key).expectStatus().isOk()
          .expectHeader().valueEquals("x-ratelimit-remaining-requests", Integer.toString(i));
      assertThat(body(ok)).isEqualTo("data:a\n\ndata:b\n\n");
    }
    WebTestClient.ResponseSpec denied = get("/annotated/flux", key).expectStatus().isEqualTo(429)
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .expectHeader().valueEquals("retry-after-ms", "60000");
    assertThat(body(denied)).contains("\"instance\":\"/annotated/flux\"", "\"reason\":\"RPM_LIMIT\"");
  }

  @Test
  void anAnnotatedHandlerReturningAPlainValueIsChargedOnSpringMvcAndRefusedAtStartOnWebFlux() {
    List<String> args = new ArrayList<>(List.of("--server.port=0"));
    Arrays.stream(ScenarioApp.PROPERTIES).forEach(p -> args.add("--" + p));
    SpringApplicationBuilder plain = new SpringApplicationBuilder(PlainValueApp.class).web(stack());
    if (stack() == WebApplicationType.REACTIVE) {
      assertThatThrownBy(() -> plain.run(args.toArray(String[]::new)).close())
          .hasStackTraceContaining("@RateLimited on Models.models() returns Map: on WebFlux an "
              + "annotated handler method must return a Mono or a Flux");
      return;
    }
    try (ConfigurableApplicationContext running = plain.run(args.toArray(String[]::new))) {
      WebTestClient models = WebTestClient.bindToServer().baseUrl("http://localhost:" + port(running)).build();
      String key = newKey();
      for (int i = 1; i >= 0; i--) {
        models.get().uri("/models").header("Authorization", "Bearer " + key).exchange()
            .expectStatus().isOk()
            .expectHeader().valueEquals("x-ratelimit-remaining-requests", Integer.toString(i));
      }
      WebTestClient.ResponseSpec denied = models.get().uri("/models").header("Authorization", "Bearer " + key)
          .exchange().expectStatus().isEqualTo(429)
          .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
      assertThat(body(denied)).contains("\"instance\":\"/models\"", "\"policy\":\"annotated\"");
    }
  }

  @Test
  void handlerMatchedByRouteAndAnnotationIsChargedOnce() {
    String key = newKey();
    for (int i = 2; i >= 0; i--) {
      get("/v1/both", key).expectStatus().isOk()
          .expectHeader().valueEquals("RateLimit", "\"routed\";r=" + i + ";t=60");
    }
    get("/v1/both", key).expectStatus().isEqualTo(429);
  }

  @Test
  void routeDefersToTheAnnotationOfItsHandler() {
    String key = newKey();
    // /deferred/** is routed (3 a minute), but its handler is annotated (2 a minute): that wins
    get("/deferred/annotated", key).expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"annotated\";q=2;w=60");
    get("/deferred/annotated", key).expectStatus().isOk();
    get("/deferred/annotated", key).expectStatus().isEqualTo(429);
  }

  @Test
  void malformedCostGets400ProblemNotA500() {
    String key = newKey();
    WebTestClient.ResponseSpec negative = get("/cost?tokens=-1", key).expectStatus().isBadRequest()
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
    assertThat(body(negative)).isEqualTo("{\"detail\":\"the cost expression '#tokens' of "
        + "@RateLimited on Handlers.cost() must give a finite number > 0, but gave -1.0\","
        + "\"instance\":\"/cost\",\"status\":400,\"title\":\"Bad Request\"}");
    get("/cost?tokens=NaN", key).expectStatus().isBadRequest();
    WebTestClient.ResponseSpec tooBig = get("/cost?tokens=11", key).expectStatus().isEqualTo(429)
        .expectHeader().doesNotExist("Retry-After");
    assertThat(body(tooBig)).contains("\"reason\":\"COST_EXCEEDS_CAPACITY\"", "\"retryable\":false");
  }

  // ---- the model: body, query, form

  @Test
  void hierarchyAndModelOverrideApplyToTheModelInTheJsonBody() {
    String key = newKey();
    postJson("/v1/chat", key, "{\"model\":\"gpt-4o\",\"messages\":[]}").expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60")
        .expectBody(String.class).isEqualTo("{\"echo\":\"gpt-4o\"}");
    WebTestClient.ResponseSpec denied = postJson("/v1/chat", key, "{\"model\":\"gpt-4o\"}")
        .expectStatus().isEqualTo(429);
    assertThat(body(denied)).contains("\"policy\":\"chat\",\"level\":\"chat/gpt-4o\"");
    // another model has its own budget; the per-key level (3 a minute) is shared, and the gpt-4o
    // deny above kept its per-key charge (sequential composition)
    postJson("/v1/chat", key, "{\"model\":\"gpt-4o-mini\"}").expectStatus().isOk()
        .expectBody(String.class).isEqualTo("{\"echo\":\"gpt-4o-mini\"}");
    WebTestClient.ResponseSpec perKey = postJson("/v1/chat", key, "{\"model\":\"gpt-4o-mini\"}")
        .expectStatus().isEqualTo(429);
    assertThat(body(perKey)).contains("\"reason\":\"RPM_LIMIT\",\"policy\":\"chat\",\"level\":\"per-key\"");
  }

  @Test
  void theJsonBodysModelWinsOverAModelQueryParameter() {
    String key = newKey();
    postJson("/v1/chat?model=gpt-4o-mini", key, "{\"model\":\"gpt-4o\"}").expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60")
        .expectBody(String.class).isEqualTo("{\"echo\":\"gpt-4o\"}");
    postJson("/v1/chat?model=gpt-4o-mini", key, "{\"model\":\"gpt-4o\"}").expectStatus().isEqualTo(429);
    // a body that names no model lets the query parameter in
    postJson("/v1/chat?model=gpt-4o", newKey(), "{\"messages\":[]}").expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60");
  }

  @Test
  void aQueryRouteReadsTheModelFromTheQueryAndTheHandlerStillReadsTheBody() {
    String key = newKey();
    postJson("/v1/query/chat?model=gpt-4o", key, "{\"model\":\"gpt-4o-mini\"}").expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60")
        .expectBody(String.class).isEqualTo("{\"echo\":\"gpt-4o\"}");
    assertThat(windowUsed("chat", key, "gpt-4o")).isEqualTo(2); // per-key and chat/gpt-4o
  }

  @Test
  void aFormFieldNamesTheModelAndTheHandlerStillReadsTheForm() {
    String key = newKey();
    client.post().uri("/v1/form").header("X-API-Key", key)
        .contentType(MediaType.APPLICATION_FORM_URLENCODED).bodyValue("model=gpt-4o")
        .exchange().expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60")
        .expectBody(String.class).isEqualTo("{\"echo\":\"gpt-4o\"}");
  }

  @Test
  void aModelThatIsNotAStringGets400AndChargesNothing() {
    String key = newKey();
    WebTestClient.ResponseSpec bad = postJson("/v1/chat", key, "{\"model\":42}").expectStatus().isBadRequest()
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
    assertThat(body(bad)).isEqualTo("{\"detail\":\"the body's \\\"model\\\" must be a string, but "
        + "was a JSON number\",\"instance\":\"/v1/chat\",\"status\":400,\"title\":\"Bad Request\"}");
    assertThat(windowUsed("chat", key, null)).isZero();
  }

  @Test
  void aRequestTheDispatcherRejectsAsUnsupportedIsNotCharged() {
    String key = newKey();
    // /v1/chat is routed, but takes only a POST, /v1/form only a form: 405 and 415 reach no handler
    for (int i = 0; i < 4; i++) {
      get("/v1/chat", key).expectStatus().isEqualTo(405);
      client.delete().uri("/v1/chat").header("X-API-Key", key).exchange().expectStatus().isEqualTo(405);
      postJson("/v1/form", key, "{\"model\":\"gpt-4o\"}").expectStatus().isEqualTo(415);
    }
    assertThat(windowUsed("chat", key, null) + windowUsed("chat", key, "gpt-4o")).isZero();
    postJson("/v1/chat", key, "{\"model\":\"gpt-4o\"}").expectStatus().isOk()
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "0");
  }

  // ---- keys

  @Test
  void requestWithoutApiKeyGets401Problem() {
    WebTestClient.ResponseSpec denied = client.get().uri("/v1/routed").exchange()
        .expectStatus().isUnauthorized()
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .expectHeader().valueEquals("WWW-Authenticate", "Bearer");
    assertThat(body(denied)).isEqualTo(MISSING_KEY_BODY);
    client.get().uri("/v1/routed").header("Authorization", "Bearer   ").exchange()
        .expectStatus().isUnauthorized();
  }

  @Test
  void twoDifferentCredentialsGet400AndNeitherIsCharged() throws Exception {
    String one = newKey();
    String two = newKey();
    Response r = raw("GET /v1/routed HTTP/1.1", new byte[0], header("Authorization", "Bearer " + one),
        header("X-API-Key", two));
    assertThat(r.status()).isEqualTo(400);
    assertThat(r.headers().get("content-type")).isEqualTo("application/problem+json");
    assertThat(r.body()).isEqualTo("{\"detail\":\"The request carries more than one API key "
        + "(Authorization: Bearer and X-API-Key, or one of them twice, with different values): send "
        + "one\",\"instance\":\"/v1/routed\",\"status\":400,\"title\":\"Bad Request\"}");
    assertThat(windowUsed("routed", one, null) + windowUsed("routed", two, null)).isZero();
    // the same key twice is that key
    Response same = raw("GET /v1/routed HTTP/1.1", new byte[0], header("Authorization", "Bearer " + one),
        header("X-API-Key", one));
    assertThat(same.status()).isEqualTo(200);
    assertThat(windowUsed("routed", one, null)).isEqualTo(1);
  }

  @Test
  void apiKeysNeverAppearInResponseHeadersOrBodies() {
    String key = newKey();
    for (int i = 0; i < 4; i++) {
      EntityExchangeResult<byte[]> response = get("/v1/routed", key).expectBody().returnResult();
      assertThat(new String(response.getResponseBodyContent(), StandardCharsets.UTF_8)).doesNotContain(key);
      response.getResponseHeaders().forEach((name, values) ->
          assertThat(values).as(name).noneMatch(v -> v.contains(key)));
    }
  }

  // ---- bodies the limiter rejects

  @Test
  void aDeclaredBodyAboveMaxBodyGets413AndChargesNothing() throws Exception {
    String key = newKey();
    byte[] body = ("{\"model\":\"gpt-4o\",\"pad\":\"" + "x".repeat(70_000) + "\"}")
        .getBytes(StandardCharsets.UTF_8);
    Response r = raw("POST /v1/chat HTTP/1.1", body, header("X-API-Key", key),
        header("Content-Type", JSON), header("Content-Length", Integer.toString(body.length)));
    assertThat(r.status()).isEqualTo(413);
    assertThat(r.headers().get("content-type")).isEqualTo("application/problem+json");
    assertThat(r.body()).isEqualTo("{\"detail\":\"The request body is larger than the 65536 bytes "
        + "the rate limiter accepts (ratelimiter.web.max-body)\",\"instance\":\"/v1/chat\","
        + "\"status\":413,\"title\":\"Content Too Large\",\"maxBodyBytes\":65536}");
    assertThat(windowUsed("chat", key, "gpt-4o")).isZero();
  }

  @Test
  void aChunkedBodyStreamingPastMaxBodyGets413AndChargesNothing() throws Exception {
    String key = newKey();
    byte[] body = new byte[70_000];
    Arrays.fill(body, (byte) 'x');
    Response r = raw("POST /v1/upload HTTP/1.1", RawHttp.chunked(body, 4096), header("X-API-Key", key),
        header("Content-Type", "application/octet-stream"), header("Transfer-Encoding", "chunked"));
    assertThat(r.status()).isEqualTo(413);
    assertThat(r.body()).contains("(ratelimiter.web.max-body)");
    assertThat(windowUsed("chat", key, null)).isZero();
    // within max-body it streams through to the handler, whole
    byte[] small = Arrays.copyOf(body, 30_000);
    Response ok = raw("POST /v1/upload HTTP/1.1", RawHttp.chunked(small, 4096), header("X-API-Key", key),
        header("Content-Type", "application/octet-stream"), header("Transfer-Encoding", "chunked"));
    assertThat(ok.status()).isEqualTo(200);
    assertThat(ok.body()).isEqualTo("{\"bytes\":30000}");
  }

  /** The 413 body of a request to {@code /v1/chat}, byte for byte, on every stack. */
  private static final String CHAT_TOO_LARGE_BODY = "{\"detail\":\"The request body is larger than "
      + "the 65536 bytes the rate limiter accepts (ratelimiter.web.max-body)\",\"instance\":\"/v1/chat\","
      + "\"status\":413,\"title\":\"Content Too Large\",\"maxBodyBytes\":65536}";

  /** A chunked body of {@code size} bytes whose last chunk is never sent: the client holds the rest. */
  private static byte[] unfinishedChunks(byte[] body) {
    byte[] chunked = RawHttp.chunked(body, 4096);
    return Arrays.copyOf(chunked, chunked.length - "0\r\n\r\n".length());
  }

  @Test
  void aDeclaredBodyAboveMaxBodyGets413BeforeTheBodyIsSent() throws Exception {
    String key = newKey();
    // the client declares 100 KB and sends 1 KB: the answer comes from the declared length alone
    // (Tomcat reads the rest of a body it did not read before it sends the response: all of it)
    byte[] start = ("{\"model\":\"gpt-4o\",\"pad\":\"" + "x".repeat(stack() == WebApplicationType.SERVLET
        ? 100_000 - 25 : 1000)).getBytes(StandardCharsets.UTF_8);
    for (String type : List.of(JSON, "application/x-www-form-urlencoded", "multipart/form-data; boundary=b")) {
      Response r = raw("POST /v1/chat HTTP/1.1", start, header("X-API-Key", key),
          header("Content-Type", type), header("Content-Length", "100000"));
      assertThat(r.status()).as(type).isEqualTo(413);
      assertThat(r.body()).as(type).isEqualTo(CHAT_TOO_LARGE_BODY);
    }
    assertThat(windowUsed("chat", key, "gpt-4o")).isZero();
  }

  @Test
  void aChunkedMultipartFormPastMaxBodyGets413BeforeTheRestIsSentAndChargesNothing() throws Exception {
    assumeTrue(stack() == WebApplicationType.REACTIVE,
        "Spring MVC leaves form bodies to the container (server.tomcat.*, spring.servlet.multipart.*)");
    String key = newKey();
    byte[] file = new byte[100_000];
    Arrays.fill(file, (byte) 'x');
    byte[] form = ("--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\ngpt-4o\r\n"
        + "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n"
        + "Content-Type: application/octet-stream\r\n\r\n" + new String(file, StandardCharsets.ISO_8859_1))
        .getBytes(StandardCharsets.ISO_8859_1);
    for (boolean withKey : List.of(true, false)) {
      List<Header> headers = new ArrayList<>(List.of(header("Content-Type", "multipart/form-data; boundary=b"),
          header("Transfer-Encoding", "chunked")));
      if (withKey) {
        headers.add(header("X-API-Key", key));
      }
      Response r = RawHttp.send(port, "POST /v1/chat HTTP/1.1", headers, unfinishedChunks(form));
      assertThat(r.status()).as("with a key: %s", withKey).isEqualTo(413);
      assertThat(r.body()).isEqualTo(CHAT_TOO_LARGE_BODY);
    }
    assertThat(windowUsed("chat", key, "gpt-4o")).isZero();
  }

  @Test
  void aChunkedUrlEncodedFormPastMaxBodyGets413BeforeTheRestIsSentAndChargesNothing() throws Exception {
    assumeTrue(stack() == WebApplicationType.REACTIVE,
        "Spring MVC leaves form bodies to the container (server.tomcat.*, spring.servlet.multipart.*)");
    String key = newKey();
    byte[] form = ("model=gpt-4o&pad=" + "x".repeat(100_000)).getBytes(StandardCharsets.ISO_8859_1);
    Response r = raw("POST /v1/form HTTP/1.1", unfinishedChunks(form), header("X-API-Key", key),
        header("Content-Type", "application/x-www-form-urlencoded"), header("Transfer-Encoding", "chunked"));
    assertThat(r.status()).isEqualTo(413);
    assertThat(r.body()).isEqualTo(CHAT_TOO_LARGE_BODY.replace("/v1/chat", "/v1/form"));
    assertThat(windowUsed("chat", key, "gpt-4o")).isZero();
    // a form within max-body still reaches the handler, whole, chunked or not
    byte[] small = ("model=gpt-4o&pad=" + "x".repeat(50_000)).getBytes(StandardCharsets.ISO_8859_1);
    Response ok = raw("POST /v1/form HTTP/1.1", RawHttp.chunked(small, 4096), header("X-API-Key", key),
        header("Content-Type", "application/x-www-form-urlencoded"), header("Transfer-Encoding", "chunked"));
    assertThat(ok.status()).isEqualTo(200);
    assertThat(ok.body()).isEqualTo("{\"echo\":\"gpt-4o\"}");
    assertThat(windowUsed("chat", key, "gpt-4o")).isEqualTo(2); // per-key and chat/gpt-4o
  }

  @Test
  void aJsonBodyTooLargeToReadTheModelFromGets413OnARouteThatReadsIt() throws Exception {
    String key = newKey();
    byte[] body = ("{\"model\":\"gpt-4o\",\"pad\":\"" + "x".repeat(20_000) + "\"}")
        .getBytes(StandardCharsets.UTF_8);
    Response r = raw("POST /v1/chat HTTP/1.1", body, header("X-API-Key", key),
        header("Content-Type", JSON), header("Content-Length", Integer.toString(body.length)));
    assertThat(r.status()).isEqualTo(413);
    assertThat(r.body()).contains("16384 bytes", "(ratelimiter.web.max-body-peek)");
    assertThat(windowUsed("chat", key, "gpt-4o")).isZero();
    // the query route does not read the model from the body: the same body passes
    Response query = raw("POST /v1/query/chat?model=gpt-4o HTTP/1.1", body, header("X-API-Key", key),
        header("Content-Type", JSON), header("Content-Length", Integer.toString(body.length)));
    assertThat(query.status()).isEqualTo(200);
  }

  @Test
  void invalidCompletionCapsGet400BeforeAnythingIsCharged() {
    String key = newKey();
    WebTestClient.ResponseSpec bad = postJson("/llm/chat", key,
        "{\"model\":\"m\",\"messages\":[],\"max_tokens\":-5}").expectStatus().isBadRequest()
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
    assertThat(body(bad)).contains("max_tokens must be an integer from");
    assertThat(windowUsed("llm", key, null)).isZero();
  }

  // ---- model tokens

  @Test
  void aJsonResponsesUsageReplacesTheEstimate() throws Exception {
    String key = newKey();
    postJson("/llm/chat?usage=9", key, TokenGateway.BODY_OF_20).expectStatus().isOk()
        .expectHeader().valueEquals("x-ratelimit-remaining-tokens", "80");
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 9));
    assertThat(modelTokensUsed(key)).isEqualTo(9);
  }

  @Test
  void anUpstreamErrorStatusWithoutUsageIsRefunded() throws Exception {
    String key = newKey();
    postJson("/llm/chat?fail=status", key, TokenGateway.BODY_OF_20).expectStatus().isEqualTo(502);
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 0));
    assertThat(modelTokensUsed(key)).isZero();
    assertThat(windowUsed("llm", key, null)).isEqualTo(1); // the RPM slot stays charged
  }

  @Test
  void anUpstreamErrorBeforeTheResponseIsRefunded() throws Exception {
    String key = newKey();
    postJson("/llm/chat?fail=throw", key, TokenGateway.BODY_OF_20).expectStatus().is5xxServerError();
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 0));
    assertThat(modelTokensUsed(key)).isZero();
  }

  @Test
  void aStreamPassesThroughChunkByChunkAndIsReconciledFromItsUsageChunk() throws Exception {
    String key = newKey();
    String gate = "chunks-" + key;
    HttpResponse<Stream<String>> response = http.send(HttpRequest.newBuilder(
            URI.create("http://localhost:" + port + "/llm/stream?usage=9&gate=" + gate))
        .header("Authorization", "Bearer " + key).header("Content-Type", JSON)
        .timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(TokenGateway.BODY_OF_20)).build(),
        HttpResponse.BodyHandlers.ofLines());
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("x-ratelimit-remaining-tokens")).hasValue("80");
    Iterator<String> lines = response.body().iterator();
    // the first event arrives while the handler still holds the rest of the stream
    assertThat(lines.next()).isEqualTo("data:{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}");
    app.getBean(StreamGates.class).open(gate);
    List<String> rest = new ArrayList<>();
    lines.forEachRemaining(rest::add);
    assertThat(String.join("\n", rest)).contains("\"total_tokens\":9").endsWith("data:[DONE]\n");
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 9));
    assertThat(modelTokensUsed(key)).isEqualTo(9);
  }

  @Test
  void aStreamWithoutAUsageChunkKeepsItsEstimate() throws Exception {
    String key = newKey();
    WebTestClient.ResponseSpec ok = postJson("/llm/stream", key, TokenGateway.BODY_OF_20).expectStatus().isOk();
    assertThat(body(ok)).endsWith("data:[DONE]\n\n");
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 20));
    assertThat(modelTokensUsed(key)).isEqualTo(20);
  }

  @Test
  void aStreamFailingBeforeItsFirstEventIsRefunded() throws Exception {
    String key = newKey();
    postJson("/llm/stream?fail=true", key, TokenGateway.BODY_OF_20).expectStatus().is5xxServerError();
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 0));
    assertThat(modelTokensUsed(key)).isZero();
  }

  @Test
  void aClientLeavingBeforeTheFirstResponseByteIsChargedTheEstimate() throws Exception {
    String key = newKey();
    String gate = "leave-" + key;
    byte[] body = TokenGateway.BODY_OF_20.getBytes(StandardCharsets.UTF_8);
    try (Socket socket = new Socket("localhost", port)) {
      socket.getOutputStream().write(("POST /llm/chat?gate=" + gate + " HTTP/1.1\r\nHost: localhost\r\n"
          + "Authorization: Bearer " + key + "\r\nContent-Type: " + JSON + "\r\nContent-Length: "
          + body.length + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
      socket.getOutputStream().write(body);
      socket.getOutputStream().flush();
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (modelTokensUsed(key) == 0 && System.nanoTime() < deadline) {
        LockSupport.parkNanos(Duration.ofMillis(5).toNanos()); // until the handler holds the call
      }
      assertThat(modelTokensUsed(key)).isEqualTo(20);
      socket.setSoLinger(true, 0); // the client goes away with a reset, before any response byte
    }
    if (stack() == WebApplicationType.SERVLET) {
      app.getBean(StreamGates.class).open(gate); // a servlet sees the client gone only when it writes
    }
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 20));
    assertThat(modelTokensUsed(key)).isEqualTo(20);
    app.getBean(StreamGates.class).open(gate);
  }

  @Test
  void aClientCancellingMidStreamIsChargedTheEstimate() throws Exception {
    String key = newKey();
    String gate = "cancel-" + key;
    byte[] body = TokenGateway.BODY_OF_20.getBytes(StandardCharsets.UTF_8);
    StreamStart start = RawHttp.firstEventThenReset(port,
        "POST /llm/stream?usage=9&flood=true&gate=" + gate + " HTTP/1.1",
        List.of(header("Authorization", "Bearer " + key), header("Content-Type", JSON),
            header("Content-Length", Integer.toString(body.length))), body, () -> { });
    assertThat(start.statusLine()).startsWith("HTTP/1.1 200");
    assertThat(start.firstEvent()).startsWith("data:{\"choices\"");
    // the stream goes on once the client is gone: its usage chunk never goes out
    app.getBean(StreamGates.class).open(gate);
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 20));
    assertThat(modelTokensUsed(key)).isEqualTo(20);
  }
}
