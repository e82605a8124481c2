package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Plain HTTP against the gateway on a random port, with the sample's own application.yml but its
 * limit on calls in flight lifted: these tests are about the request windows (concurrent callers
 * included), which 2 calls in flight would bind first ({@link TryItPlansAndStreamsTests} runs the
 * sample's limit on calls in flight as it ships).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "ratelimiter.policies.chat.concurrency.limit=1000")
class GatewayHttpTests {

  @LocalServerPort
  int port;

  @LocalManagementPort
  int managementPort;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> chat(String key, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    return http.send(b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path, String key) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    return http.send(b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** GET on the management port (loopback only), where the Actuator endpoints are. */
  private HttpResponse<String> actuator(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + managementPort + path))
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String body(String model) {
    return "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  }

  @Test
  void statusesAndHeadersAcrossTheGpt4oLimit() throws Exception {
    String key = "sk-http-sequence-00000001";
    for (int remaining = 2; remaining >= 0; remaining--) {
      HttpResponse<String> ok = chat(key, body("gpt-4o"));
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.headers().firstValue("RateLimit-Policy"))
          .hasValue("\"per-key\";q=10;w=60, \"chat/gpt-4o\";q=3;w=60, \"chat/gpt-4o-burst\";q=5;w=5,"
              + " \"chat/gpt-4o-concurrency\";q=1000;qu=\"concurrent-requests\", \"chat/gpt-4o-tokens\";q=500;qu=\"tokens\";w=60,"
              + " \"per-key/daily-spend\";q=4000;qu=\"cost-micros\";w=86400");
      assertThat(ok.headers().firstValue("x-ratelimit-limit-tokens")).hasValue("500");
      assertThat(ok.headers().firstValue("x-ratelimit-remaining-requests")).hasValue(Integer.toString(remaining));
      // each item its own budget: the per-key window (10) above gpt-4o's (3)
      assertThat(ok.headers().firstValue("RateLimit").orElseThrow())
          .startsWith("\"per-key\";r=" + (7 + remaining) + ";t=60, \"chat/gpt-4o\";r=" + remaining + ";t=");
      assertThat(ok.headers().firstValue("Retry-After")).isEmpty();
      assertThat(JsonPath.<String>read(ok.body(), "$.object")).isEqualTo("chat.completion");
      assertThat(JsonPath.<Integer>read(ok.body(), "$.usage.total_tokens")).isEqualTo(1 + 4);
    }
    HttpResponse<String> denied = chat(key, body("gpt-4o"));
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(denied.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    long retryAfter = Long.parseLong(denied.headers().firstValue("Retry-After").orElseThrow());
    long retryAfterMs = Long.parseLong(denied.headers().firstValue("retry-after-ms").orElseThrow());
    assertThat(retryAfter).isBetween(1L, 60L).isEqualTo((retryAfterMs + 999) / 1000);
    assertThat(JsonPath.<String>read(denied.body(), "$.reason")).isEqualTo("RPM_LIMIT");
    assertThat(JsonPath.<String>read(denied.body(), "$.level")).isEqualTo("chat/gpt-4o");
    assertThat(JsonPath.<String>read(denied.body(), "$.error.code")).isEqualTo("rate_limit_exceeded");
    assertThat(denied.body()).doesNotContain(key);
    // another model has its own budget under the same per-key level
    HttpResponse<String> mini = chat(key, body("gpt-4o-mini"));
    assertThat(mini.statusCode()).isEqualTo(200);
    assertThat(mini.headers().firstValue("RateLimit").orElseThrow())
        .startsWith("\"per-key\";r=6;t=60, \"chat\";r=4;t=60, ");
    // reserve-commit: the denied call charged no level, so the per-key level counts 3 + 1 calls
    HttpResponse<String> state = actuator("/actuator/ratelimiter/" + key);
    assertThat(JsonPath.<List<Integer>>read(state.body(), "$.budgets[?(@.budget=='per-key')].windowUsed"))
        .containsExactly(4);
  }

  @Test
  void streamedAnswerEndsWithDoneCarriesHeadersAndIsChargedOnce() throws Exception {
    String key = "sk-http-stream-000000002";
    HttpResponse<String> stream = chat(key,
        "{\"model\":\"gpt-4o-mini\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a b\"}]}");
    assertThat(stream.statusCode()).isEqualTo(200);
    assertThat(stream.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
    assertThat(stream.headers().firstValue("x-ratelimit-remaining-requests")).hasValue("4");
    List<String> events = stream.body().lines().filter(l -> l.startsWith("data: ")).toList();
    assertThat(events.get(events.size() - 1)).isEqualTo("data: [DONE]");
    assertThat(events).hasSize(5 + 1 + 1); // "Echo from gpt-4o-mini: a b", the finish chunk, [DONE]
    assertThat(events.get(events.size() - 2)).contains("\"finish_reason\":\"stop\"");
    assertThat(chat(key, body("gpt-4o-mini")).headers().firstValue("x-ratelimit-remaining-requests"))
        .hasValue("3");
  }

  @Test
  void malformedOrInvalidRequestsGet400InTheOpenAiErrorShape() throws Exception {
    String key = "sk-http-malformed-0000003";
    HttpResponse<String> malformed = chat(key, "{\"model\": \"gpt-4o\", ");
    assertThat(malformed.statusCode()).isEqualTo(400);
    assertThat(JsonPath.<String>read(malformed.body(), "$.error.type")).isEqualTo("invalid_request_error");

    HttpResponse<String> noModel = chat(key, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertThat(noModel.statusCode()).isEqualTo(400);
    assertThat(JsonPath.<String>read(noModel.body(), "$.error.param")).isEqualTo("model");

    HttpResponse<String> unknown = chat(key, body("gpt-9"));
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(JsonPath.<String>read(unknown.body(), "$.error.code")).isEqualTo("model_not_found");

    HttpResponse<String> array = chat(key, "[1, 2, 3]");
    assertThat(array.statusCode()).isEqualTo(400);

    HttpResponse<String> noKey = chat(null, body("gpt-4o"));
    assertThat(noKey.statusCode()).isEqualTo(401);
    assertThat(JsonPath.<String>read(noKey.body(), "$.error.code")).isEqualTo("invalid_api_key");
  }

  @Test
  void aMemberOfTheWrongTypeIsNamedWithTheTypeItTakes() throws Exception {
    String messages = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    Map<String, String> expected = Map.of(
        "{\"model\":\"gpt-4o-mini\",\"stream\":\"yes\"," + messages + "}", "stream|a boolean",
        "{\"model\":\"gpt-4o-mini\",\"stream_options\":\"x\"," + messages + "}", "stream_options|an object",
        "{\"model\":\"gpt-4o-mini\",\"messages\":\"hi\"}", "messages|an array",
        "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":{\"a\":1},\"content\":\"hi\"}]}",
        "messages[0].role|a string");
    int n = 0;
    for (Map.Entry<String, String> e : expected.entrySet()) {
      HttpResponse<String> wrong = chat("sk-http-wrong-type-00000" + n++, e.getKey());
      String param = e.getValue().substring(0, e.getValue().indexOf('|'));
      assertThat(wrong.statusCode()).as(e.getKey()).isEqualTo(400);
      assertThat(JsonPath.<String>read(wrong.body(), "$.error.param")).as(e.getKey()).isEqualTo(param);
      assertThat(JsonPath.<String>read(wrong.body(), "$.detail")).as(e.getKey())
          .isEqualTo("Invalid type for '" + param + "': expected "
              + e.getValue().substring(e.getValue().indexOf('|') + 1));
    }
  }

  @Test
  void modelsEndpointIsLimitedByItsAnnotation() throws Exception {
    HttpResponse<String> models = get("/v1/models", "sk-http-models-000000004");
    assertThat(models.statusCode()).isEqualTo(200);
    assertThat(models.headers().firstValue("RateLimit-Policy")).hasValue("\"models\";q=30;w=60");
    assertThat(JsonPath.<List<String>>read(models.body(), "$.data[*].id")).containsExactly("gpt-4o", "gpt-4o-mini");
    assertThat(get("/v1/models", null).statusCode()).isEqualTo(401);
  }

  @Test
  void actuatorEndpointShowsTheTenantMasked() throws Exception {
    String key = "sk-http-actuator-0000cafe";
    chat(key, body("gpt-4o"));
    chat(key, body("gpt-4o"));
    chat(key, body("gpt-4o-mini"));
    HttpResponse<String> report = actuator("/actuator/ratelimiter");
    assertThat(report.statusCode()).isEqualTo(200);
    assertThat(report.body()).doesNotContain(key);
    List<Integer> used = JsonPath.read(report.body(),
        "$.budgets[?(@.budget=='chat/gpt-4o')].top[?(@.key=='****cafe')].windowUsed");
    assertThat(used).containsExactly(2);
    List<String> models = JsonPath.read(report.body(),
        "$.budgets[?(@.budget=='chat/gpt-4o')].top[?(@.key=='****cafe')].model");
    assertThat(models).containsExactly("gpt-4o");
    HttpResponse<String> one = actuator("/actuator/ratelimiter/" + key);
    assertThat(JsonPath.<String>read(one.body(), "$.key")).isEqualTo("****cafe");
    assertThat(JsonPath.<List<Integer>>read(one.body(), "$.budgets[?(@.budget=='per-key')].windowUsed"))
        .containsExactly(3);
    assertThat(JsonPath.<List<String>>read(one.body(), "$.budgets[?(@.budget=='chat')].model"))
        .containsExactly("gpt-4o-mini");
    assertThat(one.body()).doesNotContain(key);
  }

  @Test
  void concurrentCallersOfOneKeyGetExactlyTheLimit() throws Exception {
    String key = "sk-http-concurrent-000005";
    int callers = 16;
    ExecutorService pool = Executors.newFixedThreadPool(callers);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Integer>> results = new ArrayList<>();
      for (int i = 0; i < callers; i++) {
        Callable<Integer> call = () -> {
          start.await();
          return chat(key, body("gpt-4o")).statusCode();
        };
        results.add(pool.submit(call));
      }
      start.countDown();
      int ok = 0;
      int limited = 0;
      for (Future<Integer> f : results) {
        int status = f.get();
        ok += status == 200 ? 1 : 0;
        limited += status == 429 ? 1 : 0;
      }
      assertThat(ok).isEqualTo(3);
      assertThat(limited).isEqualTo(callers - 3);
    } finally {
      pool.shutdownNow();
    }
  }
}
