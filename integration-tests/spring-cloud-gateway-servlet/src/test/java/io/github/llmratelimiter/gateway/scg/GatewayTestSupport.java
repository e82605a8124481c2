package io.github.llmratelimiter.gateway.scg;

import com.jayway.jsonpath.JsonPath;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The gateway ({@link ScgMvcGatewayApplication}) on a random port, proxying to one {@link
 * OpenAiUpstream} shared by every test class (so Spring's test context cache starts the gateway
 * once), and plain HTTP against both of its ports.
 */
@SpringBootTest(classes = ScgMvcGatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
abstract class GatewayTestSupport {

  /** The chat policy's requests a minute, per API key and model (application.yml). */
  static final int RPM = 5;

  /** The chat policy's model tokens a minute, per API key and model (application.yml). */
  static final long TPM = 2000;

  static final OpenAiUpstream UPSTREAM = OpenAiUpstream.start();

  static final Duration SETTLE = Duration.ofSeconds(10);

  @DynamicPropertySource
  static void upstream(DynamicPropertyRegistry registry) {
    registry.add("upstream.uri", UPSTREAM::uri);
  }

  @LocalServerPort
  int port;

  @LocalManagementPort
  int managementPort;

  final HttpClient http = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5))
      .build();

  /**
   * The API key a scenario calls with: its name, unless a subclass that runs the scenario beside
   * another on the same upstream needs keys of its own.
   */
  String key(String name) {
    return name;
  }

  /** A chat completion request with one user message; {@code extra} is more JSON members. */
  static String chatBody(String model, String content, String extra) {
    return "{\"model\":\"" + model + "\"," + (extra.isEmpty() ? "" : extra + ",")
        + "\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}]}";
  }

  HttpRequest chatRequest(@Nullable String apiKey, String body) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
        .timeout(Duration.ofSeconds(20))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (apiKey != null) {
      b.header("Authorization", "Bearer " + apiKey);
    }
    return b.build();
  }

  HttpResponse<String> chat(@Nullable String apiKey, String body) throws Exception {
    return http.send(chatRequest(apiKey, body), HttpResponse.BodyHandlers.ofString());
  }

  /** A chat call that also carries {@code X-API-Key}, beside {@code Authorization: Bearer} or alone. */
  HttpResponse<String> chatWithApiKeyHeader(@Nullable String bearer, String apiKey, String body)
      throws Exception {
    return http.send(HttpRequest.newBuilder(chatRequest(bearer, body), (name, value) -> true)
        .header("X-API-Key", apiKey).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<InputStream> chatStream(String apiKey, String body) throws Exception {
    return http.send(chatRequest(apiKey, body), HttpResponse.BodyHandlers.ofInputStream());
  }

  /** GET on the management port. */
  HttpResponse<String> actuator(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + managementPort + path))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * One field of a key's {@code chat} budget for one model (null: the budget entry without a
   * model), from {@code /actuator/ratelimiter/{key}}; -1 when the key is not tracked there.
   */
  long chatBudget(String apiKey, @Nullable String model, String field) throws Exception {
    HttpResponse<String> r = actuator("/actuator/ratelimiter/" + apiKey
        + (model == null ? "" : "?model=" + model));
    if (r.statusCode() == 404) {
      return -1;
    }
    List<Map<String, Object>> budgets = JsonPath.read(r.body(), "$.budgets[?(@.budget=='chat')]");
    for (Map<String, Object> b : budgets) {
      if (Objects.equals(model, b.get("model"))) {
        return ((Number) b.get(field)).longValue();
      }
    }
    return -1;
  }

  /**
   * Sends the calls at once, each from a thread of its own released together, and returns their
   * responses in the calls' order (each waited for at most 30 s).
   */
  static List<HttpResponse<String>> atOnce(List<Callable<HttpResponse<String>>> calls)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(calls.size());
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<HttpResponse<String>>> sent = new ArrayList<>();
      for (Callable<HttpResponse<String>> call : calls) {
        sent.add(pool.submit(() -> {
          start.await();
          return call.call();
        }));
      }
      start.countDown();
      List<HttpResponse<String>> responses = new ArrayList<>();
      for (Future<HttpResponse<String>> f : sent) {
        responses.add(f.get(30, TimeUnit.SECONDS));
      }
      return responses;
    } finally {
      pool.shutdownNow();
    }
  }

  static long header(HttpResponse<?> r, String name) {
    return Long.parseLong(r.headers().firstValue(name)
        .orElseThrow(() -> new AssertionError("no " + name + " header in " + r.headers().map())));
  }

  /** The data of the next server-sent event, or null at the end of the stream. */
  static @Nullable String nextEvent(BufferedReader body) throws IOException {
    for (String line = body.readLine(); line != null; line = body.readLine()) {
      if (line.startsWith("data:")) {
        return line.substring("data:".length()).strip();
      }
    }
    return null;
  }
}
