package io.github.llmratelimiter.autoconfigure.stacks;

import static io.github.llmratelimiter.autoconfigure.RawHttp.header;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.llmratelimiter.autoconfigure.BoundedLines;
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
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.RateLimitHeaders;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPlanResolver;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.github.llmratelimiter.gateway.StructuredFieldReader;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
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
 * cancel; a key's plan in its limits and headers; a call's slot on a limit on calls in flight held
 * until its response completes, its stream ends, its client disconnects or its handler fails. Each scenario uses API keys of its own; time moves only when a scenario moves it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractWebStackScenarioTests {

  private static final AtomicLong KEYS = new AtomicLong();
  private static final String JSON = "application/json";
  private static final String CONSOLE = "ratelimiter.console.enabled=true";
  private static final String CONSOLE_404 = "{\"detail\":\"The console has no resource at this path.\","
      + "\"status\":404,\"title\":\"Not Found\"}";

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
    return start(ScenarioApp.class, stack, Stream.concat(Arrays.stream(ScenarioApp.PROPERTIES),
        Arrays.stream(extra)).toArray(String[]::new));
  }

  /**
   * Starts an application on a stack, on a random port.
   *
   * @param application the application's configuration class
   * @param stack the stack
   * @param properties its properties, {@code name=value}
   * @return the running application
   */
  public static ConfigurableApplicationContext start(Class<?> application, WebApplicationType stack,
      String... properties) {
    List<String> args = new ArrayList<>(List.of("--server.port=0"));
    Arrays.stream(properties).forEach(p -> args.add("--" + p));
    return new SpringApplicationBuilder(application).web(stack).run(args.toArray(String[]::new));
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

  /**
   * Returns the properties that choose the store; none: the in-memory store, on the application's
   * manual ticker.
   *
   * @return {@code name=value} properties
   */
  protected String[] storeProperties() {
    return new String[0];
  }

  /**
   * Returns whether the store reads time from the application's manual ticker (the Redis store
   * reads the server's clock).
   *
   * @return whether a scenario may move the store's time
   */
  protected boolean storeTimeIsManual() {
    return true;
  }

  @BeforeAll
  void startApplication() {
    app = start(stack(),
        Stream.concat(Arrays.stream(storeProperties()), Stream.of(CONSOLE)).toArray(String[]::new));
    port = port(app);
    client = WebTestClient.bindToServer().baseUrl("http://localhost:" + port)
        .responseTimeout(Duration.ofSeconds(30))
        // every response's rate-limit headers, read as a client reads them (RFC 8941, the draft)
        .filter((request, next) -> next.exchange(request).doOnNext(response -> {
          Map<String, String> fields = new java.util.HashMap<>();
          for (String name : List.of(RateLimitHeaders.POLICY, RateLimitHeaders.RATE_LIMIT)) {
            List<String> values = response.headers().header(name);
            if (!values.isEmpty()) {
              fields.put(name, String.join(", ", values));
            }
          }
          StructuredFieldReader.check(fields);
        }))
        .build();
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
      used += admin(store).inspect(p.budgets(key).get(i), p.keys(key).get(i))
          .map(KeySnapshot::windowUsed).orElse(0L);
    }
    return used;
  }

  private long modelTokensUsed(String apiKey) {
    RateLimitPolicy p = app.getBean(RateLimitPolicies.class).policy("llm");
    RateLimitKey key = RateLimitKey.of(apiKey, null);
    return app.getBean(RateLimitStore.class).administration().orElseThrow()
        .inspect(p.budgets(key).get(0), p.keys(key).get(0))
        .map(KeySnapshot::modelTokensUsed).orElse(0L);
  }

  /**
   * Waits until {@code actual} reads {@code expected}: a remote store applies a settlement a moment
   * after the observers hear of it, and a front door releases a slot once the response is over,
   * which a client may see a moment before the server does. A bounded wait on a condition; no time
   * moves.
   */
  /** Waits, bounded, until a value is the one expected (what a server does after its answer). */
  static void await(String what, LongSupplier actual, long expected) {
    org.awaitility.Awaitility.await(what).atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(5)).until(() -> actual.getAsLong() == expected);
    assertThat(actual.getAsLong()).as(what).isEqualTo(expected);
  }

  private void awaitModelTokensUsed(String apiKey, long expected) throws InterruptedException {
    await("the model tokens used", () -> modelTokensUsed(apiKey), expected);
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

  /**
   * Opens a flooding stream (the handler writes until a write fails) of one key, reads its first
   * event, runs {@code whileOpen}, and resets the connection, as a client that goes away.
   */
  private StreamStart floodThenReset(String pathAndQuery, String apiKey, RawHttp.WhileOpen whileOpen)
      throws Exception {
    byte[] body = TokenGateway.BODY_OF_20.getBytes(StandardCharsets.UTF_8);
    return RawHttp.firstEventThenReset(port, "POST " + pathAndQuery + "&flood=true HTTP/1.1",
        List.of(header("Authorization", "Bearer " + apiKey), header("Content-Type", JSON),
            header("Content-Length", Integer.toString(body.length))), body, whileOpen);
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
  void eachRateLimitItemTellsItsOwnBudget() {
    // 3 a minute, a bucket of 5 refilled at 1 a second, 2 calls in flight, 500 model tokens a
    // minute; each call estimated at 20 model tokens
    String key = newKey();
    postJson("/items/chat?usage=20", key, TokenGateway.BODY_OF_20).expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"items\";q=3;w=60, "
            + "\"items-burst\";q=5;w=5, \"items-concurrency\";q=2;qu=\"concurrent-requests\", \"items-tokens\";q=500;qu=\"tokens\";w=60")
        // one of 3 used: 2 left in the window, though the call itself held 1 of the 2 slots
        .expectHeader().valueEquals("RateLimit", "\"items\";r=2;t=60, \"items-burst\";r=4;t=1, "
            + "\"items-concurrency\";r=1, \"items-tokens\";r=480;t=60")
        .expectHeader().valueEquals("x-ratelimit-limit-requests", "3")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "2")
        .expectHeader().valueEquals("x-ratelimit-reset-requests", "1m0s")
        .expectHeader().valueEquals("x-ratelimit-limit-tokens", "500")
        .expectHeader().valueEquals("x-ratelimit-remaining-tokens", "480");
    for (int i = 1; i >= 0; i--) {
      postJson("/items/chat?usage=20", key, TokenGateway.BODY_OF_20).expectStatus().isOk()
          .expectHeader().valueEquals("x-ratelimit-remaining-requests", Integer.toString(i))
          .expectHeader().valueMatches("RateLimit", "\"items\";r=" + i + ";t=60, "
              + "\"items-burst\";r=" + (i + 2) + ";t=" + (3 - i) + ", "
              + "\"items-concurrency\";r=[01], \"items-tokens\";r=4[46]\\d;t=60");
    }
    // the window denies: its item first, with r=0; the bucket still holds 2 calls
    postJson("/items/chat?usage=20", key, TokenGateway.BODY_OF_20).expectStatus().isEqualTo(429)
        .expectHeader().valueMatches("RateLimit", "\"items\";r=0;t=60, \"items-burst\";r=2;t=3, "
            + "\"items-concurrency\";r=[012], \"items-tokens\";r=4\\d\\d;t=60")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "0")
        .expectHeader().exists("Retry-After");
  }

  @Test
  void requestCrossingTheLimitGets429WithExactBytesAndHeaders() {
    Assumptions.assumeTrue(storeTimeIsManual(), "exact retry times need the store's time to stand still");
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
    Assumptions.assumeTrue(storeTimeIsManual(), "the store's time cannot be moved");
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

  /** Waits the {@code retry-after-ms} a 429 advises, on the application's clock; returns it. */
  private long waitAdvised(WebTestClient.ResponseSpec denied) {
    String advised = denied.expectStatus().isEqualTo(429).returnResult(String.class)
        .getResponseHeaders().getFirst("retry-after-ms");
    assertThat(advised).as("retry-after-ms").isNotNull();
    long ms = Long.parseLong(advised);
    app.getBean(ManualTicker.class).advance(Duration.ofMillis(ms));
    return ms;
  }

  @Test
  void aClientThatWaitsTheAdvisedRetryIsAdmittedForEveryReason() {
    Assumptions.assumeTrue(storeTimeIsManual(), "exact retry times need the store's time to stand still");
    // the starter's default composition, reserve-commit; 5 a minute, a bucket of 4 at 0.1 a second
    String key = newKey();
    get("/v1/retry", key).expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"retry\";q=5;w=60, \"retry-burst\";q=4;w=40")
        // each item its own budget: 4 of 5 in the window, 3 of 4 in the bucket (full in 10 s)
        .expectHeader().valueEquals("RateLimit", "\"retry\";r=4;t=60, \"retry-burst\";r=3;t=10")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "4");
    for (int i = 0; i < 3; i++) {
      get("/v1/retry", key).expectStatus().isOk();
    }
    WebTestClient.ResponseSpec burst = get("/v1/retry", key).expectStatus().isEqualTo(429)
        .expectHeader().valueEquals("Retry-After", "10")
        .expectHeader().valueEquals("RateLimit", "\"retry-burst\";r=0;t=40, \"retry\";r=1;t=60")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "1");
    assertThat(waitAdvised(burst)).isEqualTo(10_000);
    get("/v1/retry", key).expectStatus().isOk(); // the burst deny kept no window slot
    WebTestClient.ResponseSpec rpm = get("/v1/retry", key).expectStatus().isEqualTo(429)
        .expectHeader().valueEquals("RateLimit", "\"retry\";r=0;t=60, \"retry-burst\";r=0;t=40");
    assertThat(body(rpm)).contains("\"reason\":\"RPM_LIMIT\"");
    assertThat(waitAdvised(get("/v1/retry", key))).isEqualTo(50_000);
    get("/v1/retry", key).expectStatus().isOk();

    // model tokens: 100 a minute on /llm/**, each call estimated at 20 and using 20
    String tenant = newKey();
    for (int i = 0; i < 5; i++) {
      postJson("/llm/chat?usage=20", tenant, TokenGateway.BODY_OF_20).expectStatus().isOk();
    }
    WebTestClient.ResponseSpec tpm = postJson("/llm/chat?usage=20", tenant, TokenGateway.BODY_OF_20);
    assertThat(body(tpm)).contains("\"reason\":\"TPM_LIMIT\"");
    assertThat(waitAdvised(postJson("/llm/chat?usage=20", tenant, TokenGateway.BODY_OF_20)))
        .isEqualTo(60_000);
    postJson("/llm/chat?usage=20", tenant, TokenGateway.BODY_OF_20).expectStatus().isOk();
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
    Assumptions.assumeTrue(storeTimeIsManual(), "exact retry times need the store's time to stand still");
    String key = newKey();
    get("/annotated", key).expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit", "\"annotated\";r=1;t=60, \"annotated-burst\";r=9;t=1")
        .expectBody(String.class).isEqualTo("annotated");
    get("/annotated", key).expectStatus().isOk();
    WebTestClient.ResponseSpec denied = get("/annotated", key).expectStatus().isEqualTo(429)
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .expectHeader().valueEquals("Retry-After", "60")
        .expectHeader().valueEquals("RateLimit-Policy",
            "\"annotated\";q=2;w=60, \"annotated-burst\";q=10;w=1")
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
    Assumptions.assumeTrue(storeTimeIsManual(), "exact retry times need the store's time to stand still");
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
        .expectHeader().valueEquals("RateLimit-Policy",
            "\"annotated\";q=2;w=60, \"annotated-burst\";q=10;w=1");
    get("/deferred/annotated", key).expectStatus().isOk();
    get("/deferred/annotated", key).expectStatus().isEqualTo(429);
  }

  @Test
  void malformedCostGets400ProblemNotA500() {
    String key = newKey();
    WebTestClient.ResponseSpec negative = get("/cost?tokens=-1", key).expectStatus().isBadRequest()
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
    // the problem names neither the expression nor the method
    assertThat(body(negative)).isEqualTo("{\"detail\":\"The request's rate-limit cost must be a "
        + "finite number > 0.\",\"instance\":\"/cost\",\"status\":400,\"title\":\"Bad Request\"}");
    get("/cost?tokens=NaN", key).expectStatus().isBadRequest();
    WebTestClient.ResponseSpec tooBig = get("/cost?tokens=11", key).expectStatus().isEqualTo(429)
        .expectHeader().doesNotExist("Retry-After")
        // refused before any state was read: the budgets, but no figure of them
        .expectHeader().valueEquals("RateLimit-Policy",
            "\"annotated\";q=2;w=60, \"annotated-burst\";q=10;w=1")
        .expectHeader().doesNotExist("RateLimit")
        .expectHeader().doesNotExist("x-ratelimit-remaining-requests");
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
    // deny above charged it nothing (reserve-commit, the starter's default): two more pass
    postJson("/v1/chat", key, "{\"model\":\"gpt-4o-mini\"}").expectStatus().isOk()
        .expectBody(String.class).isEqualTo("{\"echo\":\"gpt-4o-mini\"}");
    postJson("/v1/chat", key, "{\"model\":\"gpt-4o-mini\"}").expectStatus().isOk();
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
  void theLimiterReadsAJsonBodyInItsDeclaredCharsetAsTheHandlerDoes() throws Exception {
    // EBCDIC: bytes that are no JSON when read as UTF-8, which the handler decodes as declared
    String key = newKey();
    byte[] ebcdic = "{\"model\":\"gpt-4o\"}".getBytes(Charset.forName("IBM037"));
    for (int i = 0; i < 2; i++) {
      WebTestClient.ResponseSpec r = client.post().uri("/v1/chat?model=gpt-4o-mini")
          .header("X-API-Key", key).header("Content-Type", "application/json;charset=IBM037")
          .bodyValue(ebcdic).exchange();
      if (i == 0) {
        r.expectHeader().valueEquals("RateLimit-Policy", "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60");
        if (stack() == WebApplicationType.SERVLET) {
          r.expectStatus().isOk().expectBody(String.class).isEqualTo("{\"echo\":\"gpt-4o\"}");
        } else { // charged as gpt-4o, then WebFlux's JSON decoder refuses a charset not Unicode
          r.expectStatus().isBadRequest();
        }
      } else {
        assertThat(body(r.expectStatus().isEqualTo(429))).contains("\"level\":\"chat/gpt-4o\"");
      }
    }
    // the checks read the body as declared too: a negative max_tokens is a 400
    byte[] negative = "{\"model\":\"gpt-4o\",\"max_tokens\":-1}".getBytes(Charset.forName("IBM037"));
    client.post().uri("/v1/chat").header("X-API-Key", newKey())
        .header("Content-Type", "application/json;charset=IBM037").bodyValue(negative).exchange()
        .expectStatus().isBadRequest().expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
    // a charset the limiter cannot read the body in is a 400 problem, charged nothing
    String unknown = newKey();
    byte[] json = "{\"model\":\"gpt-4o\"}".getBytes(StandardCharsets.UTF_8);
    Response rejected = raw("POST /v1/chat HTTP/1.1", json, header("X-API-Key", unknown),
        header("Content-Type", "application/json; charset=x-no-such-charset"),
        header("Content-Length", Integer.toString(json.length)));
    assertThat(rejected.status()).isEqualTo(400);
    assertThat(rejected.headers()).containsEntry("content-type", "application/problem+json");
    assertThat(windowUsed("chat", unknown, "gpt-4o") + windowUsed("chat", unknown, null)).isZero();
    // nor is a form or a content type that does not parse ever a 500
    byte[] form = "model=gpt-4o".getBytes(StandardCharsets.UTF_8);
    for (String type : List.of("application/x-www-form-urlencoded; charset=x-no-such-charset",
        "application/json; charset=\"", "application/json; =", "/json", "application/x-www-form-urlencoded;;")) {
      Response answer = raw("POST /v1/form HTTP/1.1", form, header("X-API-Key", newKey()),
          header("Content-Type", type), header("Content-Length", Integer.toString(form.length)));
      assertThat(answer.status()).as(type).isBetween(200, 499);
    }
  }

  @Test
  void aContentTypeParameterNeverMakesAJsonBodyAForm() {
    String key = newKey();
    String type = "application/json; x=\"application/x-www-form-urlencoded\"";
    for (int i = 0; i < 2; i++) {
      WebTestClient.ResponseSpec r = client.post().uri("/v1/chat?model=gpt-4o-mini")
          .header("X-API-Key", key).header("Content-Type", type)
          .bodyValue("{\"model\":\"gpt-4o\"}".getBytes(StandardCharsets.UTF_8)).exchange();
      if (i == 0) {
        r.expectStatus().isOk()
            .expectHeader().valueEquals("RateLimit-Policy", "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60")
            .expectBody(String.class).isEqualTo("{\"echo\":\"gpt-4o\"}");
      } else {
        r.expectStatus().isEqualTo(429);
      }
    }
  }

  @Test
  void aCorsPreflightIsNeitherChargedNorRejectedAndTheCallAfterItIs() {
    // a browser asks before a cross-origin call, without credentials: the application's CORS
    // configuration answers it, whatever the limits
    String key = newKey();
    for (int i = 0; i < 3; i++) {
      client.options().uri("/v1/chat").header("Origin", "https://app.example")
          .header("Access-Control-Request-Method", "POST")
          .header("Access-Control-Request-Headers", "x-api-key, content-type").exchange()
          .expectStatus().isOk()
          .expectHeader().valueEquals("Access-Control-Allow-Origin", "https://app.example")
          .expectHeader().doesNotExist("RateLimit");
    }
    client.post().uri("/v1/chat").header("Origin", "https://app.example").header("X-API-Key", key)
        .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"model\":\"gpt-4o\"}").exchange()
        .expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit", "\"per-key\";r=2;t=60, \"chat/gpt-4o\";r=0;t=60");
    client.post().uri("/v1/chat").header("Origin", "https://app.example").header("X-API-Key", key)
        .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"model\":\"gpt-4o\"}").exchange()
        .expectStatus().isEqualTo(429);
    assertThat(windowUsed("chat", key, "gpt-4o")).isEqualTo(2); // per-key and chat/gpt-4o, once
  }

  @Test
  void anOptionsRequestWithAnApiKeyIsNotChargedUnderARouteThatDoesNotNameOptions() {
    // the framework answers it (the methods the path allows): a route without methods covers
    // every method but OPTIONS, so spamming it spends nothing of the key's budgets
    String key = newKey();
    for (int i = 0; i < 5; i++) {
      client.options().uri("/v1/chat").header("X-API-Key", key).exchange()
          .expectStatus().isOk()
          .expectHeader().doesNotExist("RateLimit");
    }
    assertThat(windowUsed("chat", key, null) + windowUsed("chat", key, "gpt-4o")).isZero();
    postJson("/v1/chat", key, "{\"model\":\"gpt-4o\"}").expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit", "\"per-key\";r=2;t=60, \"chat/gpt-4o\";r=0;t=60");
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
  void aFormBodyThatCannotBeReadGets400AndChargesNothing() {
    String key = newKey();
    // a percent-escape that is not one
    WebTestClient.ResponseSpec badEscape = client.post().uri("/v1/form").header("X-API-Key", key)
        .contentType(MediaType.APPLICATION_FORM_URLENCODED).bodyValue("model=%zz").exchange()
        .expectStatus().isBadRequest();
    if (stack() == WebApplicationType.REACTIVE) { // the limiter reads the form, and answers its 400
      badEscape.expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
      assertThat(body(badEscape)).isEqualTo("{\"detail\":\"The request's form body cannot be read.\","
          + "\"instance\":\"/v1/form\",\"status\":400,\"title\":\"Bad Request\"}");
      // a multipart body without its boundary (Spring MVC's dispatcher fails such a body itself)
      WebTestClient.ResponseSpec noBoundary = client.post().uri("/v1/chat").header("X-API-Key", key)
          .header("Content-Type", "multipart/form-data").bodyValue("model=gpt-4o").exchange()
          .expectStatus().isBadRequest().expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
      assertThat(body(noBoundary)).isEqualTo("{\"detail\":\"The request's form body cannot be read.\","
          + "\"instance\":\"/v1/chat\",\"status\":400,\"title\":\"Bad Request\"}");
    } else {
      body(badEscape);
    }
    assertThat(windowUsed("chat", key, null) + windowUsed("chat", key, "gpt-4o")).isZero();
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
  void anApiKeyNamedLikeAnotherSourcesKeyGets400AndChargesNoOne() {
    String alice = newKey();
    String problem = "{\"detail\":\"The request's API key must not start with 'principal:' or "
        + "'ip:'.\",\"instance\":\"%s\",\"status\":400,\"title\":\"Bad Request\"}";
    for (String forged : List.of("principal:" + alice, "ip:127.0.0.1")) {
      for (String path : List.of("/v1/routed", "/annotated")) {
        assertThat(body(get(path, forged).expectStatus().isBadRequest()
            .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)))
            .isEqualTo(problem.formatted(path));
      }
    }
    for (String policy : List.of("routed", "annotated")) {
      assertThat(windowUsed(policy, "principal:" + alice, null)).isZero();
      assertThat(windowUsed(policy, "ip:127.0.0.1", null)).isZero();
    }
    // a key that only contains them is an API key like any other
    get("/v1/routed", "sk-principal:" + alice).expectStatus().isOk();
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

  // ---- key sources: client address, principal, expressions; routes by method

  /** Asserts the 400 problem of a request that lacks what its route or annotation is keyed by. */
  private static void assertNotKeyed(Response response, String path) {
    assertThat(response.status()).isEqualTo(400);
    assertThat(response.headers().get("content-type")).isEqualTo("application/problem+json");
    assertThat(response.body()).isEqualTo("{\"detail\":\"The request does not carry what this "
        + "endpoint's rate limit is counted by.\",\"instance\":\"" + path + "\",\"status\":400,"
        + "\"title\":\"Bad Request\"}");
    namesNothingInternal(response.body());
  }

  /** Asserts that a problem names no expression, header, method or class of the application. */
  private static void namesNothingInternal(String problem) {
    assertThat(problem).doesNotContain("X-Tenant", "x-tenant", "header(", "#", "@", "toUpperCase",
        "tenantKeys", "Handlers", "RouteKeyRequest", "Spel", "Exception", "ratelimiter.");
  }

  private long loopbackWindowUsed() {
    return windowUsed("keyed", "ip:127.0.0.1", null) + windowUsed("keyed", "ip:0:0:0:0::/64", null);
  }

  @Test
  void aRouteKeyedOnTheClientAddressNeedsNoApiKeyAndIgnoresForgedForwardedHeaders() {
    client.get().uri("/keyed/ip").exchange().expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit", "\"keyed\";r=1;t=60");
    // an attacker rotates forged addresses: with forwarded headers off they change nothing
    client.get().uri("/keyed/ip").header("X-Forwarded-For", "203.0.113.9").exchange()
        .expectStatus().isOk().expectHeader().valueEquals("RateLimit", "\"keyed\";r=0;t=60");
    client.get().uri("/keyed/ip").header("X-Forwarded-For", "203.0.113.10")
        .header("Forwarded", "for=198.51.100.1").header("X-Real-IP", "198.51.100.2")
        .exchange().expectStatus().isEqualTo(429);
    assertThat(loopbackWindowUsed()).isEqualTo(2);
    assertThat(windowUsed("keyed", "ip:203.0.113.9", null) + windowUsed("keyed", "203.0.113.9", null)
        + windowUsed("keyed", "ip:203.0.113.10", null) + windowUsed("keyed", "ip:198.51.100.1", null))
        .isZero();
  }

  @Test
  void aRouteKeyedOnThePrincipalCountsPerUserAndAnUnauthenticatedRequestGets401() {
    String alice = newKey();
    for (int r = 1; r >= 0; r--) {
      client.get().uri("/keyed/principal").header(KeyFixtures.USER_HEADER, alice).exchange()
          .expectStatus().isOk().expectHeader().valueEquals("RateLimit", "\"keyed\";r=" + r + ";t=60");
    }
    client.get().uri("/keyed/principal").header(KeyFixtures.USER_HEADER, alice).exchange()
        .expectStatus().isEqualTo(429);
    client.get().uri("/keyed/principal").header(KeyFixtures.USER_HEADER, newKey()).exchange()
        .expectStatus().isOk();
    assertThat(windowUsed("keyed", "principal:" + alice, null)).isEqualTo(2);
    // an API key does not stand in for the principal; no challenge of a scheme the limiter does not own
    WebTestClient.ResponseSpec anonymous = get("/keyed/principal", newKey())
        .expectStatus().isUnauthorized()
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .expectHeader().doesNotExist("WWW-Authenticate");
    assertThat(body(anonymous)).isEqualTo("{\"detail\":\"The request is not authenticated: this "
        + "endpoint's rate limit is counted per user.\",\"instance\":\"/keyed/principal\","
        + "\"status\":401,\"title\":\"Unauthorized\"}");
  }

  @Test
  void anAnnotatedHandlerWithoutAKeyUnderAKeyedRouteIsChargedToTheRoutesKeyNotToAnyApiKeySent() {
    String alice = newKey();
    // a fresh API key on every request buys no fresh budget: the route counts per user
    for (int r = 1; r >= 0; r--) {
      get("/keyed/annotated/principal", newKey()).expectStatus().isUnauthorized();
      client.get().uri("/keyed/annotated/principal").header(KeyFixtures.USER_HEADER, alice)
          .header("X-API-Key", newKey()).exchange()
          .expectStatus().isOk().expectHeader().valueEquals("RateLimit", "\"keyed\";r=" + r + ";t=60");
    }
    client.get().uri("/keyed/annotated/principal").header(KeyFixtures.USER_HEADER, alice)
        .header("X-API-Key", newKey()).exchange().expectStatus().isEqualTo(429);
    assertThat(windowUsed("keyed", "principal:" + alice, null)).isEqualTo(2);
    String tenant = newKey();
    for (int r = 1; r >= 0; r--) {
      client.get().uri("/keyed/annotated/tenant").header("X-Tenant", tenant).exchange()
          .expectStatus().isOk().expectHeader().valueEquals("RateLimit", "\"keyed\";r=" + r + ";t=60");
    }
    client.get().uri("/keyed/annotated/tenant").header("X-Tenant", tenant)
        .header("Authorization", "Bearer " + newKey()).exchange().expectStatus().isEqualTo(429);
    assertThat(windowUsed("keyed", tenant, null)).isEqualTo(2);
  }

  @Test
  void aKeyExpressionChargesWhatItGivesAndRoutesMatchByMethod() {
    String tenant = newKey();
    for (int r = 1; r >= 0; r--) {
      client.post().uri("/keyed/tenant").header("X-Tenant", tenant).exchange()
          .expectStatus().isOk().expectHeader().valueEquals("RateLimit", "\"keyed\";r=" + r + ";t=60");
    }
    client.post().uri("/keyed/tenant").header("x-tenant", tenant).exchange().expectStatus().isEqualTo(429);
    assertThat(windowUsed("keyed", tenant, null)).isEqualTo(2);
    // GET is another route (the API key, routed); DELETE is no route at all
    String key = newKey();
    get("/keyed/tenant", key).expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"routed\";q=3;w=60");
    client.get().uri("/keyed/tenant").header("X-Tenant", tenant).exchange().expectStatus().isUnauthorized();
    for (int i = 0; i < 4; i++) {
      client.delete().uri("/keyed/tenant").header("X-Tenant", tenant).exchange()
          .expectStatus().isOk().expectHeader().doesNotExist("RateLimit");
    }
    assertThat(windowUsed("routed", key, null)).isEqualTo(1);
  }

  @Test
  void aKeyExpressionThatGivesNothingGets400NamingNothingInternal() throws Exception {
    // no X-Tenant, an empty one, a blank one (sent raw: HTTP clients refuse to send it)
    List<List<Header>> requests = List.of(List.of(), List.of(header("X-Tenant", "")),
        List.of(header("X-Tenant", "   ")));
    for (List<Header> tenant : requests) {
      List<Header> headers = new ArrayList<>(tenant);
      headers.add(header("Authorization", "Bearer " + newKey())); // an API key does not stand in
      assertNotKeyed(RawHttp.send(port, "POST /keyed/tenant HTTP/1.1", headers, new byte[0]),
          "/keyed/tenant");
    }
    assertThat(windowUsed("keyed", "anonymous", null)).isZero();
  }

  @Test
  void aKeyExpressionThatFailsOnARequestGets400NamingNothingInternal() {
    WebTestClient.ResponseSpec failed = client.get().uri("/keyed/broken").exchange()
        .expectStatus().isBadRequest().expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON);
    String problem = body(failed);
    assertThat(problem).isEqualTo("{\"detail\":\"The request's rate-limit key cannot be read from "
        + "it.\",\"instance\":\"/keyed/broken\",\"status\":400,\"title\":\"Bad Request\"}");
    namesNothingInternal(problem);
    // with the header it evaluates
    client.get().uri("/keyed/broken").header("X-Tenant", "acme-" + KEYS.incrementAndGet()).exchange()
        .expectStatus().isOk();
  }

  @Test
  void aKeyExpressionWhoseBeanMethodThrowsGets400NamingNothingInternal() {
    String unknown = "unknown-" + KEYS.incrementAndGet();
    for (WebTestClient.ResponseSpec failed : List.of(
        client.get().uri("/keyed/throwing").header("X-Tenant", unknown).exchange(),
        client.get().uri("/keyed/throwing").exchange(), // no header: the method gets null
        get("/annotated/throwing?tenant=" + unknown, newKey()),
        get("/annotated/throwing", newKey()))) {
      String problem = body(failed.expectStatus().isBadRequest()
          .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON));
      assertThat(problem).startsWith("{\"detail\":\"The request's rate-limit key cannot be read "
          + "from it.\",\"instance\":\"/").doesNotContain(unknown, "known");
      namesNothingInternal(problem);
    }
    String known = "known-" + KEYS.incrementAndGet();
    client.get().uri("/keyed/throwing").header("X-Tenant", known).exchange().expectStatus().isOk();
    get("/annotated/throwing?tenant=" + known, newKey()).expectStatus().isOk();
    assertThat(windowUsed("keyed", known, null)).isEqualTo(1);
    assertThat(windowUsed("annotated", known, null)).isEqualTo(1);
  }

  @Test
  void aKeyExpressionsHeaderSentTwiceWithDifferentValuesGets400AndNeitherIsCharged() throws Exception {
    String victim = newKey();
    String mine = newKey();
    Response twice = raw("POST /keyed/tenant HTTP/1.1", new byte[0],
        header("X-Tenant", victim), header("X-Tenant", mine));
    assertThat(twice.status()).isEqualTo(400);
    assertThat(twice.headers().get("content-type")).isEqualTo("application/problem+json");
    assertThat(twice.body()).isEqualTo("{\"detail\":\"The request carries a header its rate "
        + "limit is counted by more than once, with different values.\",\"instance\":"
        + "\"/keyed/tenant\",\"status\":400,\"title\":\"Bad Request\"}");
    namesNothingInternal(twice.body());
    assertThat(windowUsed("keyed", victim, null) + windowUsed("keyed", mine, null)).isZero();
    // the same value twice names one tenant
    Response same = raw("POST /keyed/tenant HTTP/1.1", new byte[0],
        header("X-Tenant", mine), header("x-tenant", mine));
    assertThat(same.status()).isEqualTo(200);
    assertThat(windowUsed("keyed", mine, null)).isEqualTo(1);
  }

  @Test
  void aKeyExpressionSeesTheNativeRequestAndCallsBeans() {
    String tenant = newKey();
    client.post().uri("/keyed/bean").header("X-Tenant", tenant).exchange().expectStatus().isOk();
    String stack = stack() == WebApplicationType.SERVLET ? "servlet" : "reactive";
    assertThat(windowUsed("keyed", "tenant:" + tenant + "@" + stack, null)).isEqualTo(1);
  }

  @Test
  void anAnnotationsKeyExpressionThatGivesNothingGets400NamingNothingInternal() throws Exception {
    String tenant = newKey();
    get("/annotated/tenant?tenant=" + tenant, newKey()).expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit", "\"annotated\";r=1;t=60, \"annotated-burst\";r=9;t=1");
    assertThat(windowUsed("annotated", tenant, null)).isEqualTo(1);
    for (String query : new String[] {"", "?tenant=", "?tenant=%20%20"}) {
      assertNotKeyed(raw("GET /annotated/tenant" + query + " HTTP/1.1", new byte[0],
          header("Authorization", "Bearer " + newKey())), "/annotated/tenant");
    }
    assertThat(windowUsed("annotated", "anonymous", null)).isZero();
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
    awaitModelTokensUsed(key, 9);
  }

  @Test
  void anUpstreamErrorStatusWithoutUsageIsRefunded() throws Exception {
    String key = newKey();
    postJson("/llm/chat?fail=status", key, TokenGateway.BODY_OF_20).expectStatus().isEqualTo(502);
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 0));
    awaitModelTokensUsed(key, 0);
    assertThat(windowUsed("llm", key, null)).isEqualTo(1); // the RPM slot stays charged
  }

  @Test
  void anUpstreamErrorBeforeTheResponseIsRefunded() throws Exception {
    String key = newKey();
    postJson("/llm/chat?fail=throw", key, TokenGateway.BODY_OF_20).expectStatus().is5xxServerError();
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 0));
    awaitModelTokensUsed(key, 0);
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
    BoundedLines lines = BoundedLines.of(response);
    // the first event arrives while the handler still holds the rest of the stream
    assertThat(lines.next()).isEqualTo("data:{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}");
    app.getBean(StreamGates.class).open(gate);
    assertThat(String.join("\n", lines.rest())).contains("\"total_tokens\":9").endsWith("data:[DONE]\n");
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 9));
    awaitModelTokensUsed(key, 9);
  }

  @Test
  void aStreamWithoutAUsageChunkKeepsItsEstimate() throws Exception {
    String key = newKey();
    WebTestClient.ResponseSpec ok = postJson("/llm/stream", key, TokenGateway.BODY_OF_20).expectStatus().isOk();
    assertThat(body(ok)).endsWith("data:[DONE]\n\n");
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 20));
    awaitModelTokensUsed(key, 20);
  }

  @Test
  void aStreamFailingBeforeItsFirstEventIsRefunded() throws Exception {
    String key = newKey();
    postJson("/llm/stream?fail=true", key, TokenGateway.BODY_OF_20).expectStatus().is5xxServerError();
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 0));
    awaitModelTokensUsed(key, 0);
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
    StreamStart start = floodThenReset("/llm/stream?usage=9&gate=" + gate, key, () -> { });
    assertThat(start.statusLine()).startsWith("HTTP/1.1 200");
    assertThat(start.firstEvent()).startsWith("data:{\"choices\"");
    // the stream goes on once the client is gone: its usage chunk never goes out
    app.getBean(StreamGates.class).open(gate);
    assertThat(nextSettlement()).isEqualTo(new Settled("llm", 20, 20));
    awaitModelTokensUsed(key, 20);
  }

  // ---- plans

  @Test
  void aKeyMovedToABiggerPlanIsAdmittedWithThePlansLimitsInItsHeaders() {
    String key = newKey();
    for (int i = 0; i < 3; i++) {
      get("/v1/routed", key).expectStatus().isOk();
    }
    get("/v1/routed", key).expectStatus().isEqualTo(429);
    RateLimitPlanResolver plans = app.getBean(RateLimitPlanResolver.class);
    plans.assign(key, "pro");
    // the 3 calls in the window count against pro's 10: nothing spent was reset
    get("/v1/routed", key).expectStatus().isOk()
        .expectHeader().valueEquals("RateLimit-Policy", "\"routed\";q=10;w=60")
        .expectHeader().valueEquals("RateLimit", "\"routed\";r=6;t=60")
        .expectHeader().valueEquals("x-ratelimit-limit-requests", "10")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "6");
    plans.assign(key, null);
    get("/v1/routed", key).expectStatus().isEqualTo(429)
        .expectHeader().valueEquals("x-ratelimit-limit-requests", "3");
    assertThat(windowUsed("routed", key, null)).isEqualTo(4);
  }

  // ---- calls in flight: a slot from admission until the response is over, released once

  private long inFlight(String apiKey) {
    RateLimitPolicy p = app.getBean(RateLimitPolicies.class).policy("slots");
    RateLimitKey key = RateLimitKey.of(apiKey, null);
    return app.getBean(RateLimitStore.class).administration().orElseThrow()
        .inspect(p.budgets(key).get(0), p.keys(key).get(0))
        .map(KeySnapshot::inFlight).orElse(0L);
  }

  private void awaitReleased(String apiKey) throws InterruptedException {
    await("the slot released", () -> inFlight(apiKey), 0);
  }

  private HttpResponse<Stream<String>> openStream(String path, String apiKey) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
        .header("Authorization", "Bearer " + apiKey).header("Content-Type", JSON)
        .timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(TokenGateway.BODY_OF_20)).build(),
        HttpResponse.BodyHandlers.ofLines());
  }

  @Test
  void aCompletedCallReleasesItsSlot() throws Exception {
    String key = newKey();
    for (int i = 0; i < 3; i++) {
      postJson("/slots/chat?usage=5", key, TokenGateway.BODY_OF_20).expectStatus().isOk();
      awaitReleased(key);
    }
  }

  @Test
  void aStreamHoldsItsSlotUntilItEndsAndAConcurrentCallGetsAConcurrencyLimitProblem() throws Exception {
    String key = newKey();
    String gate = "slots-" + key;
    HttpResponse<Stream<String>> stream = openStream("/slots/stream?gate=" + gate, key);
    assertThat(stream.statusCode()).isEqualTo(200);
    BoundedLines lines = BoundedLines.of(stream);
    assertThat(lines.next()).startsWith("data:");
    assertThat(inFlight(key)).isEqualTo(1);
    WebTestClient.ResponseSpec denied = postJson("/slots/chat", key, TokenGateway.BODY_OF_20)
        .expectStatus().isEqualTo(429)
        .expectHeader().contentType(MediaType.APPLICATION_PROBLEM_JSON)
        // never "retry now": the wait until the held lease expires, 10 minutes at most
        .expectHeader().valueEquals("Retry-After", "600")
        // the slots item first, none free; the window tells its own requests left
        .expectHeader().valueMatches("RateLimit", "\"slots-concurrency\";r=0, \"slots\";r=99999;t=\\d+")
        .expectHeader().valueEquals("x-ratelimit-remaining-requests", "99999");
    String retryMs = denied.returnResult(Void.class).getResponseHeaders().getFirst("retry-after-ms");
    assertThat(Long.parseLong(retryMs)).isBetween(590_000L, 600_000L);
    String problem = body(denied);
    assertThat(problem).contains("\"reason\":\"CONCURRENCY_LIMIT\"", "\"retryable\":true",
        "\"retryAfterMs\":" + retryMs);
    if (storeTimeIsManual()) { // exact bytes need the store's time to stand still
      assertThat(retryMs).isEqualTo("600000");
      assertThat(problem).isEqualTo("{\"detail\":\"Rate limit exceeded for policy 'slots' "
          + "(CONCURRENCY_LIMIT on level 'slots'). Retry after 600000 ms.\",\"instance\":\"/slots/chat\","
          + "\"status\":429,\"title\":\"Too Many Requests\","
          + "\"type\":\"urn:llmratelimiter:problem:rate-limited\",\"reason\":\"CONCURRENCY_LIMIT\","
          + "\"policy\":\"slots\",\"level\":\"slots\",\"retryable\":true,\"retryAfterMs\":600000}");
    }
    app.getBean(StreamGates.class).open(gate);
    assertThat(String.join("\n", lines.rest())).endsWith("data:[DONE]\n");
    awaitReleased(key);
    postJson("/slots/chat", key, TokenGateway.BODY_OF_20).expectStatus().isOk();
  }

  @Test
  void aClientDisconnectingMidStreamReleasesTheSlot() throws Exception {
    String key = newKey();
    String gate = "slots-reset-" + key;
    StreamStart start = floodThenReset("/slots/stream?gate=" + gate, key,
        () -> assertThat(inFlight(key)).isEqualTo(1));
    assertThat(start.statusLine()).startsWith("HTTP/1.1 200");
    // the stream goes on once the client is gone: its next writes fail, and the call ends
    app.getBean(StreamGates.class).open(gate);
    awaitReleased(key);
    postJson("/slots/chat", key, TokenGateway.BODY_OF_20).expectStatus().isOk();
  }

  @Test
  void aFailingHandlerReleasesTheSlot() throws Exception {
    String key = newKey();
    postJson("/slots/chat?fail=throw", key, TokenGateway.BODY_OF_20).expectStatus().is5xxServerError();
    awaitReleased(key);
    postJson("/slots/chat?fail=status", key, TokenGateway.BODY_OF_20).expectStatus().isEqualTo(502);
    awaitReleased(key);
    postJson("/slots/stream?fail=true", key, TokenGateway.BODY_OF_20).expectStatus().is5xxServerError();
    awaitReleased(key);
    postJson("/slots/chat", key, TokenGateway.BODY_OF_20).expectStatus().isOk();
  }

  // ---- the operator's console

  @Test
  void consoleServesItsPageScriptAndStyleSheetAndNothingElse() throws Exception {
    Response page = raw("GET /ratelimiter/console HTTP/1.1", new byte[0]);
    assertThat(page.status()).isEqualTo(200);
    assertThat(page.headers()).containsEntry("content-type", "text/html;charset=UTF-8")
        .containsEntry("cache-control", "no-store").containsEntry("x-frame-options", "DENY")
        .containsEntry("x-content-type-options", "nosniff").containsEntry("referrer-policy", "no-referrer");
    assertThat(page.headers().get("content-security-policy")).startsWith("default-src 'none'; script-src 'self';")
        .contains("connect-src 'self'", "frame-ancestors 'none'");
    // the endpoint's path; no metrics or health endpoint exposed; read-only access, no plans
    assertThat(page.body()).contains("src=\"/ratelimiter/console/console.js\"",
        "href=\"/ratelimiter/console/console.css\"", "data-endpoint=\"/actuator/ratelimiter\"",
        "data-metrics=\"\"", "data-health=\"\"", "data-reset=\"false\"", "data-assign=\"false\"",
        "data-refresh=\"2000\"");
    assertThat(raw("GET /ratelimiter/console/ HTTP/1.1", new byte[0]).body()).isEqualTo(page.body());
    Response script = raw("GET /ratelimiter/console/console.js HTTP/1.1", new byte[0]);
    assertThat(script.status()).isEqualTo(200);
    assertThat(script.headers()).containsEntry("content-type", "text/javascript;charset=UTF-8");
    assertThat(script.body()).contains("'use strict'");
    assertThat(raw("GET /ratelimiter/console/console.css HTTP/1.1", new byte[0]).headers())
        .containsEntry("content-type", "text/css;charset=UTF-8");
    Response head = raw("HEAD /ratelimiter/console HTTP/1.1", new byte[0]);
    assertThat(head.status()).isEqualTo(200);
    assertThat(head.body()).isEmpty();
    // nothing else: no other file of the jar, no way out of the console's paths
    for (String path : List.of("/ratelimiter/console/index.html", "/ratelimiter/console/console.js/x",
        "/ratelimiter/console/console",
        "/ratelimiter/console/RateLimiterConsoleManagementContextConfiguration.class",
        "/ratelimiter/console/%2e%2e/%2e%2e/actuator/ratelimiter")) {
      Response missing = raw("GET " + path + " HTTP/1.1", new byte[0]);
      assertThat(missing.status()).as(path).isIn(400, 404);
      assertThat(missing.body()).as(path).doesNotContain("budgets", "use strict");
    }
    Response missing = raw("GET /ratelimiter/console/index.html HTTP/1.1", new byte[0]);
    assertThat(missing.headers()).containsEntry("content-type", "application/problem+json");
    assertThat(missing.body()).isEqualTo(CONSOLE_404);
    for (String method : List.of("POST", "PUT", "DELETE", "PATCH")) {
      Response refused = raw(method + " /ratelimiter/console HTTP/1.1", new byte[0],
          header("Content-Length", "0"));
      assertThat(refused.status()).as(method).isEqualTo(405);
      assertThat(refused.headers()).containsEntry("allow", "GET, HEAD");
      assertThat(refused.body()).isEqualTo("{\"detail\":\"The console answers GET and HEAD only.\","
          + "\"status\":405,\"title\":\"Method Not Allowed\"}");
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
