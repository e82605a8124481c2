package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpoint;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Upstreams end to end on a real server ({@link UpstreamApp}), the same on every stack: what the
 * provider's headers say in one tenant's response holds for the next tenant's call (a 429 of the
 * upstream's own kind, with the provider's retry time), a provider's 429 closes the upstream and is
 * counted, garbage headers change nothing, and the limiter's own headers are never read as the
 * provider's. A call on a model no upstream serves is never held by one. On the in-memory store
 * time moves only when a test moves it; a subclass may run them on a store with a clock of its own
 * ({@link #storeProperties()}), where retry times are checked as bounds and a test waits (bounded)
 * for the upstream to open again instead of moving time.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractUpstreamServerTests {

  private static final AtomicLong KEYS = new AtomicLong();
  private static final String GPT = "{\"model\":\"gpt-4o-mini\",\"messages\":[]}";
  private static final String CLAUDE = "{\"model\":\"claude-3\",\"messages\":[]}";

  private ConfigurableApplicationContext app;
  private int port;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  /**
   * Returns the stack the application runs on.
   *
   * @return the web application type
   */
  protected abstract WebApplicationType stack();

  /**
   * Returns the properties that choose the store; none: the in-memory store, on the application's
   * manual ticker.
   *
   * @return {@code name=value} properties
   */
  protected String[] storeProperties() {
    return new String[0];
  }

  private boolean manualTime() {
    return storeProperties().length == 0;
  }

  @BeforeAll
  void startApplication() {
    app = AbstractWebStackScenarioTests.start(UpstreamApp.class, stack(),
        java.util.stream.Stream.concat(Arrays.stream(UpstreamApp.PROPERTIES),
            Arrays.stream(storeProperties())).toArray(String[]::new));
    port = AbstractWebStackScenarioTests.port(app);
  }

  @AfterAll
  protected void stopApplication() {
    if (app != null) {
      app.close();
    }
  }

  @BeforeEach
  void startAfresh() throws InterruptedException {
    app.getBean(ManualTicker.class).advance(Duration.ofMinutes(2)); // every window and report over
    awaitOpen(); // on a store's own clock, until an earlier test's provider report lapsed
    app.getBean(UpstreamApp.Reports.class).statuses.clear();
  }

  /** Moves time on by {@code ms}, or on a store's own clock waits (bounded) until it opens. */
  private void pass(long ms) throws InterruptedException {
    if (manualTime()) {
      app.getBean(ManualTicker.class).advance(Duration.ofMillis(ms));
    } else {
      awaitOpen();
    }
  }

  private void awaitOpen() {
    Awaitility.await("the upstream open").atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(20)).until(() -> upstream().closedForMs() == 0);
  }

  /** A retry time: exactly {@code expected} on manual time, else within (0, expected]. */
  private void assertRetry(long actual, long expected) {
    if (manualTime()) {
      assertThat(actual).isEqualTo(expected);
    } else {
      assertThat(actual).isBetween(1L, expected);
    }
  }

  private static String newKey() {
    return "sk-upstream-" + KEYS.incrementAndGet() + "-0123456789";
  }

  /** Calls the gateway as {@code key}, the provider answering with {@code headers}. */
  private HttpResponse<String> call(String key, String body, int status, String... headers)
      throws Exception {
    String query = "status=" + status + Arrays.stream(headers)
        .map(h -> "&h=" + URLEncoder.encode(h, StandardCharsets.UTF_8)).collect(Collectors.joining());
    return http.send(HttpRequest.newBuilder(
            URI.create("http://localhost:" + port + "/v1/chat/completions?" + query))
        .header("Authorization", "Bearer " + key)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** Waits (bounded) until the enforcer has applied the report of the response just received. */
  private void awaitReport(int status) throws InterruptedException {
    assertThat(app.getBean(UpstreamApp.Reports.class).statuses.poll(10, TimeUnit.SECONDS))
        .isEqualTo(status);
  }

  private UpstreamStatus upstream() {
    return app.getBean(RateLimitStore.class).upstreamStatus(
        app.getBean(UpstreamRoutes.class).upstream("openai-main").orElseThrow());
  }

  @Test
  void aProvidersRemainingZeroDeniesTheNextTenantUntilItsReset() throws Exception {
    HttpResponse<String> first = call(newKey(), GPT, 200,
        "x-ratelimit-remaining-requests:0", "x-ratelimit-reset-requests:2s");
    assertThat(first.statusCode()).isEqualTo(200);
    awaitReport(200);
    MeterRegistry meters = app.getBean(MeterRegistry.class);
    assertThat(meters.get("ratelimiter.upstream.requests.remaining").tag("upstream", "openai-main")
        .gauge().value()).isZero();
    assertThat(meters.get("ratelimiter.upstream.tokens.remaining").tag("upstream", "openai-main")
        .gauge().value()).isNaN();
    assertThat(meters.get("ratelimiter.upstream.in.flight").tag("upstream", "openai-main")
        .gauge().value()).isZero();

    String other = newKey();
    HttpResponse<String> denied = call(other, GPT, 200);
    assertThat(denied.statusCode()).isEqualTo(429);
    assertRetry(Long.parseLong(denied.headers().firstValue("Retry-After").orElseThrow()), 2);
    assertRetry(Long.parseLong(denied.headers().firstValue("retry-after-ms").orElseThrow()), 2000);
    assertThat(denied.headers().firstValue("RateLimit-Policy")).hasValue("\"chat\";q=3;w=60");
    assertThat(denied.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(JsonPath.<String>read(denied.body(), "$.type"))
        .isEqualTo("urn:llmratelimiter:problem:upstream-capacity");
    assertThat(JsonPath.<String>read(denied.body(), "$.title")).isEqualTo("Upstream capacity exhausted");
    assertThat(JsonPath.<String>read(denied.body(), "$.reason")).isEqualTo("UPSTREAM_LIMIT");
    assertThat(JsonPath.<String>read(denied.body(), "$.upstream")).isEqualTo("openai-main");

    assertThat(call(newKey(), CLAUDE, 200).statusCode()).as("no upstream: not held").isEqualTo(200);
    pass(2000);
    assertThat(call(other, GPT, 200).statusCode()).isEqualTo(200);
    awaitReport(200); // each test leaves no report behind for the next
  }

  @Test
  void aProviders429ClosesTheUpstreamUntilItsRetryAfterAndIsCountedAndShown() throws Exception {
    MeterRegistry meters = app.getBean(MeterRegistry.class);
    double before = rejections(meters);
    assertThat(call(newKey(), GPT, 429, "retry-after:3").statusCode()).isEqualTo(429);
    awaitReport(429);
    // the metrics are told on the same thread, maybe after the test's observer: wait for them
    Awaitility.await("the provider's 429 counted").atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(5)).until(() -> rejections(meters) >= before + 1);
    assertThat(rejections(meters)).isEqualTo(before + 1);
    assertRetry((long) Math.ceil(meters.get("ratelimiter.upstream.closed")
        .tag("upstream", "openai-main").gauge().value()), 3);
    RateLimiterEndpoint.UpstreamView view = app.getBean(RateLimiterEndpoint.class).report(null)
        .upstreams().get(0);
    assertThat(view.name()).isEqualTo("openai-main");
    assertThat(view.rpm()).isEqualTo(100);
    assertRetry(view.status().closedForMs(), 3000);
    HttpResponse<String> endpoint = http.send(HttpRequest.newBuilder(URI.create("http://localhost:"
        + port + "/actuator/ratelimiter")).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(JsonPath.<String>read(endpoint.body(), "$.upstreams[0].name")).isEqualTo("openai-main");
    assertThat(JsonPath.<Integer>read(endpoint.body(), "$.upstreams[0].status.requestsLimit"))
        .isEqualTo(100);
    assertRetry(JsonPath.<Number>read(endpoint.body(), "$.upstreams[0].status.closedForMs")
        .longValue(), 3000);

    HttpResponse<String> denied = call(newKey(), GPT, 200);
    assertThat(denied.statusCode()).isEqualTo(429);
    assertRetry(Long.parseLong(denied.headers().firstValue("Retry-After").orElseThrow()), 3);
    assertThat(JsonPath.<String>read(denied.body(), "$.reason")).isEqualTo("UPSTREAM_LIMIT");
  }

  private static double rejections(MeterRegistry meters) {
    Counter c = meters.find("ratelimiter.upstream.provider.rejections").tag("upstream", "openai-main")
        .counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void garbageProviderHeadersLeaveTheCallAndTheUpstreamAlone() throws Exception {
    HttpResponse<String> r = call(newKey(), GPT, 200,
        "x-ratelimit-remaining-requests:-5", "x-ratelimit-reset-requests:abc",
        "x-ratelimit-remaining-tokens:99999999999999999999999", "x-ratelimit-reset-tokens:1e9s",
        "x-ratelimit-limit-requests:0", "x-ratelimit-limit-tokens:", "retry-after:Wed, 99 Foo",
        "retry-after-ms:-1", "x-ratelimit-reset-requests:99999999h");
    assertThat(r.statusCode()).isEqualTo(200);
    awaitReport(200);
    UpstreamStatus status = upstream();
    assertThat(status.closedForMs()).isZero();
    assertThat(status.reportedRequestsRemaining()).isNull();
    assertThat(status.reportedTokensRemaining()).isNull();
    assertThat(status.requestsLimit()).isEqualTo(100);
    assertThat(call(newKey(), GPT, 200).statusCode()).isEqualTo(200);
    awaitReport(200);
  }

  @Test
  void theLimitersOwnHeadersAreNotReadAsTheProviders() throws Exception {
    // the response carries the caller's x-ratelimit-remaining-requests (2 of 3) and its reset:
    // read as the provider's, they would let only 2 more calls through for a minute
    HttpResponse<String> first = call(newKey(), GPT, 200);
    assertThat(first.headers().firstValue("x-ratelimit-remaining-requests")).hasValue("2");
    awaitReport(200);
    assertThat(upstream().reportedRequestsRemaining()).isNull();
    for (int i = 0; i < 3; i++) {
      assertThat(call(newKey(), GPT, 200).statusCode()).isEqualTo(200);
      awaitReport(200);
    }
  }
}
