package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpoint;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Waiting for an upstream end to end on a real server ({@link UpstreamWaitApp}, an upstream that
 * takes one call at a time): a call that finds the upstream busy waits and passes once the call
 * ahead of it ends; between two tenants the quiet one goes before the noisy one's later calls; a
 * call whose longest wait passes gets a 429 with the upstream's Retry-After; the waits are timed
 * and the queue is shown. Time passes for real here (the upstream's slot is freed by the test, the
 * short policy waits 300 ms); every wait for a condition is bounded. On WebFlux, a client that
 * disconnects leaves the queue at once. A subclass may run them on another store ({@link
 * #storeProperties()}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractUpstreamWaitServerTests {

  private static final AtomicLong IDS = new AtomicLong();
  private static final String BODY =
      "{\"model\":\"gpt-4o-mini\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\","
          + "\"content\":\"hello\"}]}";

  protected ConfigurableApplicationContext app;
  protected int port;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  /**
   * Returns the stack the application runs on.
   *
   * @return the web application type
   */
  protected abstract WebApplicationType stack();

  /**
   * Returns the properties that choose the store; none: the in-memory store.
   *
   * @return {@code name=value} properties
   */
  protected String[] storeProperties() {
    return new String[0];
  }

  /**
   * Returns the properties of the stack's server; none by default.
   *
   * @return {@code name=value} properties
   */
  protected String[] serverProperties() {
    return new String[0];
  }

  @BeforeAll
  void startApplication() {
    app = AbstractWebStackScenarioTests.start(UpstreamWaitApp.class, stack(),
        java.util.stream.Stream.of(UpstreamWaitApp.PROPERTIES, storeProperties(), serverProperties())
            .flatMap(java.util.Arrays::stream).toArray(String[]::new));
    port = AbstractWebStackScenarioTests.port(app);
  }

  @AfterAll
  protected void stopApplication() {
    if (app != null) {
      app.close();
    }
  }

  /** Answers whatever a failed test left held, so that the next one finds the upstream free. */
  @AfterEach
  void nothingLeftBehind() throws Exception {
    for (String id : List.copyOf(gate().held.keySet())) {
      gate().release(id);
    }
    awaitThat(() -> waiting() == 0);
    gate().arrivals.clear();
  }

  protected UpstreamWaitApp.Gate gate() {
    return app.getBean(UpstreamWaitApp.Gate.class);
  }

  protected int waiting() {
    return app.getBean(UpstreamWaitingRoom.class).waiting("stand-in");
  }

  protected static String newKey() {
    return "sk-wait-" + IDS.incrementAndGet() + "-0123456789";
  }

  /** Sends a call as {@code key} on {@code path} with the provider's id {@code id}. */
  protected CompletableFuture<HttpResponse<String>> send(String key, String path, String id) {
    return http.sendAsync(HttpRequest.newBuilder(
            URI.create("http://localhost:" + port + path + "/chat/completions?id=" + id))
        .header("Authorization", "Bearer " + key)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(BODY))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The id of the next call the provider receives (waited for, bounded). */
  protected String arrival() throws InterruptedException {
    String id = gate().arrivals.poll(10, TimeUnit.SECONDS);
    assertThat(id).as("a call reached the provider").isNotNull();
    return id;
  }

  /** Waits (bounded) until a condition holds. */
  protected static void awaitThat(BooleanSupplier condition) {
    Awaitility.await("condition within 10 s").atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(5)).until(condition::getAsBoolean);
  }

  protected double timeouts() {
    Counter c = app.getBean(MeterRegistry.class).find("ratelimiter.upstream.wait.timeouts")
        .tag("upstream", "stand-in").counter();
    return c == null ? 0 : c.count();
  }

  protected long waits(String outcome) {
    Timer t = app.getBean(MeterRegistry.class).find("ratelimiter.upstream.wait")
        .tag("upstream", "stand-in").tag("outcome", outcome).timer();
    return t == null ? 0 : t.count();
  }

  @Test
  void aCallThatFindsTheUpstreamBusyWaitsAndPassesWhenTheCallAheadEnds() throws Exception {
    long admittedBefore = waits("admitted");
    CompletableFuture<HttpResponse<String>> ahead = send(newKey(), "/v1", "ahead");
    assertThat(arrival()).isEqualTo("ahead");
    CompletableFuture<HttpResponse<String>> waiter = send(newKey(), "/v1", "waiter");
    awaitThat(() -> waiting() == 1);
    assertThat(JsonPath.<Integer>read(endpoint(), "$.upstreams[0].waiting")).isEqualTo(1);
    assertThat(app.getBean(MeterRegistry.class).get("ratelimiter.upstream.queue")
        .tag("upstream", "stand-in").gauge().value()).isEqualTo(1);
    assertThat(waiter).isNotDone();
    assertThat(gate().arrivals).isEmpty();

    gate().release("ahead");
    assertThat(ahead.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(arrival()).as("admitted once the slot is free").isEqualTo("waiter");
    gate().release("waiter");
    assertThat(waiter.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    // the listener is told after the call left the room, maybe after its response
    awaitThat(() -> waits("admitted") == admittedBefore + 1);
  }

  @Test
  void theQuietTenantGoesBeforeTheNoisyTenantsLaterCalls() throws Exception {
    String noisy = newKey();
    String quiet = newKey();
    List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
    calls.add(send(noisy, "/v1", "n0"));
    assertThat(arrival()).isEqualTo("n0");
    calls.add(send(noisy, "/v1", "n1"));
    awaitThat(() -> waiting() == 1);
    calls.add(send(noisy, "/v1", "n2"));
    awaitThat(() -> waiting() == 2);
    calls.add(send(quiet, "/v1", "q1"));
    awaitThat(() -> waiting() == 3);

    List<String> order = new ArrayList<>(List.of("n0"));
    String current = "n0";
    for (int i = 0; i < 3; i++) {
      gate().release(current);
      current = arrival();
      order.add(current);
    }
    gate().release(current);
    for (CompletableFuture<HttpResponse<String>> c : calls) {
      assertThat(c.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
    // first come, first served would give n0, n1, n2, q1
    assertThat(order.indexOf("q1")).as("order %s", order).isLessThan(order.indexOf("n2"));
  }

  @Test
  void aCallWhoseLongestWaitPassesGetsA429WithTheUpstreamsRetryAfter() throws Exception {
    double before = timeouts();
    CompletableFuture<HttpResponse<String>> ahead = send(newKey(), "/v1", "hold");
    assertThat(arrival()).isEqualTo("hold");
    long start = System.nanoTime();
    HttpResponse<String> late = send(newKey(), "/short", "late").get(10, TimeUnit.SECONDS);
    long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertThat(late.statusCode()).isEqualTo(429);
    assertThat(waitedMs).as("it waited its longest wait").isGreaterThanOrEqualTo(300);
    assertThat(Long.parseLong(late.headers().firstValue("Retry-After").orElseThrow()))
        .isPositive();
    assertThat(JsonPath.<String>read(late.body(), "$.reason")).isEqualTo("UPSTREAM_LIMIT");
    assertThat(JsonPath.<String>read(late.body(), "$.upstream")).isEqualTo("stand-in");
    awaitThat(() -> timeouts() == before + 1);
    assertThat(waiting()).isZero();
    assertThat(gate().arrivals).isEmpty();
    gate().release("hold");
    assertThat(ahead.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
  }

  @Test
  void aClientThatDisconnectsLeavesTheQueueAtOnceAndIsNeverAdmitted() throws Exception {
    assumeTrue(stack() == WebApplicationType.REACTIVE,
        "Tomcat does not watch the connection of an asynchronous request that neither reads nor"
            + " writes: Spring MVC sees the client gone only when the wait ends");
    long cancelledBefore = waits("cancelled");
    CompletableFuture<HttpResponse<String>> ahead = send(newKey(), "/v1", "ahead");
    assertThat(arrival()).isEqualTo("ahead");
    Socket gone = sendRaw(newKey(), "gone");
    awaitThat(() -> waiting() == 1);
    assertThat(view().waiting()).isEqualTo(1);

    gone.close();
    awaitThat(() -> waiting() == 0);
    awaitThat(() -> waits("cancelled") == cancelledBefore + 1);
    gate().release("ahead");
    assertThat(ahead.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    // the slot is free: a later call passes at once, and the call that left never came
    CompletableFuture<HttpResponse<String>> after = send(newKey(), "/v1", "after");
    assertThat(arrival()).isEqualTo("after");
    gate().release("after");
    assertThat(after.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(gate().arrivals).isEmpty();
  }

  /** Sends a call on a plain socket, so that the test can close the connection mid-wait. */
  protected Socket sendRaw(String key, String id) throws Exception {
    Socket socket = new Socket("localhost", port);
    byte[] body = BODY.getBytes(StandardCharsets.UTF_8);
    OutputStream out = socket.getOutputStream();
    out.write(("POST /v1/chat/completions?id=" + id + " HTTP/1.1\r\nHost: localhost\r\n"
        + "Authorization: Bearer " + key + "\r\nContent-Type: application/json\r\n"
        + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
    out.write(body);
    out.flush();
    return socket;
  }

  protected String endpoint() throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port
            + "/actuator/ratelimiter")).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString()).body();
  }

  protected RateLimiterEndpoint.UpstreamView view() {
    return app.getBean(RateLimiterEndpoint.class).report(null).upstreams().get(0);
  }
}
