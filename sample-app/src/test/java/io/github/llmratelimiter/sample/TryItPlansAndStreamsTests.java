package io.github.llmratelimiter.sample;

import org.awaitility.Awaitility;
import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.BoundedLines;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The "Try it" steps (sample-app/README.md) for plans and calls in flight, against the sample as it
 * ships (its application.yml), on random ports: a denied key moved to pro with one call on the
 * management port is admitted under pro's limits and nothing it spent is reset; of three parallel
 * streams of one key the third gets {@code CONCURRENCY_LIMIT}, and a fourth sent after one ended
 * passes. The stand-in streams slowly here (300ms a chunk) so that two streams are surely still
 * running when the third and fourth are sent.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "gateway.stand-in.chunk-delay=300ms")
class TryItPlansAndStreamsTests {

  private static final String HELLO = "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello!\"}]}";
  private static final String STREAM = "{\"model\":\"gpt-4o-mini\",\"stream\":true,\"messages\":[{\"role\":"
      + "\"user\",\"content\":\"one two three four five six seven eight nine ten eleven twelve thirteen"
      + " fourteen fifteen\"}]}";

  @LocalServerPort
  int port;

  @LocalManagementPort
  int managementPort;

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  private HttpRequest chat(String key, String body) {
    return HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/chat/completions"))
        .header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
        .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body)).build();
  }

  private HttpResponse<String> send(HttpRequest request) throws Exception {
    return http.send(request, HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> assign(String key, String body) throws Exception {
    return send(HttpRequest.newBuilder(URI.create("http://localhost:" + managementPort
            + "/actuator/ratelimiter/" + key))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
        .timeout(Duration.ofSeconds(30)).build());
  }

  private String keyReport(String key) throws Exception {
    return send(HttpRequest.newBuilder(URI.create("http://localhost:" + managementPort
        + "/actuator/ratelimiter/" + key)).timeout(Duration.ofSeconds(30)).build()).body();
  }

  /**
   * "Try it", the first loop (sample-app/README.md, and the README's demo): after the first of
   * three gpt-4o calls, the request window has 2 left, which {@code x-ratelimit-remaining-requests}
   * and the window's {@code RateLimit} item say, while the call itself holds one of its key's 2
   * call slots, which the concurrency item says.
   */
  @Test
  void afterTheFirstOfThreeCallsEachItemTellsItsOwnBudget() throws Exception {
    HttpResponse<String> first = send(chat("sk-demo-0000-0001-" + System.nanoTime(), HELLO));
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(first.headers().firstValue("x-ratelimit-limit-requests")).hasValue("3");
    assertThat(first.headers().firstValue("x-ratelimit-remaining-requests")).hasValue("2");
    assertThat(first.headers().firstValue("x-ratelimit-reset-requests")).hasValue("1m0s");
    assertThat(first.headers().firstValue("RateLimit").orElseThrow()).startsWith(
        "\"per-key\";r=9;t=60, \"chat/gpt-4o\";r=2;t=60, \"chat/gpt-4o-burst\";r=4;t=1, "
            + "\"chat/gpt-4o-concurrency\";r=1, \"chat/gpt-4o-tokens\";r=426;t=60, "
            + "\"per-key/daily-spend\";r=");
  }

  @Test
  void aDeniedKeyMovedToProIsAdmittedUnderProsLimitsAndKeepsWhatItSpent() throws Exception {
    String key = "sk-demo-0000-0004";
    int[] statuses = new int[4];
    for (int i = 0; i < 4; i++) {
      statuses[i] = send(chat(key, HELLO)).statusCode();
    }
    assertThat(statuses).containsExactly(200, 200, 200, 429);
    HttpResponse<String> assigned = assign(key, "{\"plan\":\"pro\"}");
    assertThat(assigned.statusCode()).isEqualTo(200);
    assertThat(assigned.body()).startsWith("{\"key\":\"****0004\",\"id\":\"")
        .endsWith("\"plan\":\"pro\",\"assigned\":true}").doesNotContain(key);
    HttpResponse<String> admitted = send(chat(key, HELLO));
    assertThat(admitted.statusCode()).isEqualTo(200);
    assertThat(admitted.headers().firstValue("RateLimit-Policy")).hasValue(
        "\"per-key\";q=100;w=60, \"chat/gpt-4o\";q=30;w=60, \"chat/gpt-4o-burst\";q=5;w=5, "
            + "\"chat/gpt-4o-concurrency\";q=2;qu=\"concurrent-requests\", \"chat/gpt-4o-tokens\";q=500;qu=\"tokens\";w=60,"
            + " \"per-key/monthly-spend\";q=5000000;qu=\"cost-micros\";w="
            + java.time.YearMonth.now(java.time.ZoneOffset.UTC).lengthOfMonth() * 86_400);
    assertThat(admitted.headers().firstValue("x-ratelimit-limit-requests")).hasValue("30");
    String report = keyReport(key);
    assertThat(JsonPath.<String>read(report, "$.plan")).isEqualTo("pro");
    assertThat(JsonPath.<List<Integer>>read(report, "$.budgets[?(@.budget=='chat/gpt-4o')].windowUsed"))
        .containsExactly(4);
    // back to free: its 4 calls exceed gpt-4o's 3 again
    assertThat(assign(key, "{\"plan\":null}").statusCode()).isEqualTo(200);
    assertThat(send(chat(key, HELLO)).statusCode()).isEqualTo(429);
    HttpResponse<String> unknown = assign(key, "{\"plan\":\"gold\"}");
    assertThat(unknown.statusCode()).isEqualTo(400);
    assertThat(unknown.body()).contains("'gold'");
  }

  @Test
  void ofThreeParallelStreamsTheThirdGetsConcurrencyLimitAndAFourthAfterOneEndedPasses() throws Exception {
    String key = "sk-demo-0000-0003";
    HttpResponse<Stream<String>> one = http.send(chat(key, STREAM), HttpResponse.BodyHandlers.ofLines());
    HttpResponse<Stream<String>> two = http.send(chat(key, STREAM), HttpResponse.BodyHandlers.ofLines());
    assertThat(one.statusCode()).isEqualTo(200);
    assertThat(two.statusCode()).isEqualTo(200);
    BoundedLines first = BoundedLines.of(one);
    BoundedLines second = BoundedLines.of(two);
    assertThat(first.next()).startsWith("data: ");
    assertThat(second.next()).startsWith("data: ");

    HttpResponse<String> third = send(chat(key, STREAM));
    assertThat(third.statusCode()).isEqualTo(429);
    // the first slot's lease (600 s) ends 600 s after it was taken, a moment ago on a busy machine
    assertThat(Long.parseLong(third.headers().firstValue("Retry-After").orElseThrow()))
        .isBetween(590L, 600L);
    assertThat(JsonPath.<String>read(third.body(), "$.reason")).isEqualTo("CONCURRENCY_LIMIT");
    assertThat(JsonPath.<String>read(third.body(), "$.error.code")).isEqualTo("rate_limit_exceeded");

    String last = "";
    while (first.hasNext()) {
      last = first.next();
      if (!last.isEmpty()) {
        assertThat(second.hasNext()).isTrue(); // the second stream is still running meanwhile
      }
    }
    assertThat(last).isIn("data: [DONE]", "");
    awaitInFlight(key, 1);
    HttpResponse<String> fourth = send(chat(key, STREAM));
    assertThat(fourth.statusCode()).isEqualTo(200);
    assertThat(fourth.body()).endsWith("data: [DONE]\n\n");
    second.rest();
  }

  /**
   * Waits until the key holds {@code slots} slots: the gateway releases a stream's slot once its
   * response is over, a moment after the client read its last bytes. A bounded wait on a condition.
   */
  /**
   * "Spend a quota": three calls of 100 words on gpt-4o under free's daily spend of 0.004; the
   * third is denied QUOTA_EXCEEDED until midnight UTC, the endpoint shows 0.00256 spent, and a move
   * to pro and back resets nothing.
   */
  @Test
  void aDailySpendIsSpentByPricedUsageAndItsDenyLastsUntilMidnight() throws Exception {
    String key = "sk-demo-0000-0009-" + System.nanoTime();
    String words = "word ".repeat(100).strip();
    String body = "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\""
        + words + "\"}]}";
    HttpResponse<String> first = send(chat(key, body));
    HttpResponse<String> second = send(chat(key, body));
    HttpResponse<String> third = send(chat(key, body));
    long midnight = java.time.LocalDate.now(java.time.ZoneOffset.UTC).plusDays(1)
        .atStartOfDay(java.time.ZoneOffset.UTC).toEpochSecond();
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(first.headers().firstValue("RateLimit").orElseThrow())
        .contains("\"per-key/daily-spend\";r=2030;t=");
    assertThat(second.statusCode()).isEqualTo(200);
    assertThat(second.headers().firstValue("RateLimit").orElseThrow())
        .contains("\"per-key/daily-spend\";r=750;t=");
    assertThat(third.statusCode()).isEqualTo(429);
    assertThat(third.headers().firstValue("RateLimit").orElseThrow())
        .startsWith("\"per-key/daily-spend\";r=1440;t=");
    long retryAfter = Long.parseLong(third.headers().firstValue("Retry-After").orElseThrow());
    long toMidnight = midnight - java.time.Instant.now().getEpochSecond();
    assertThat(retryAfter).isBetween(toMidnight - 2, toMidnight + 1);
    assertThat(JsonPath.<String>read(third.body(), "$.reason")).isEqualTo("QUOTA_EXCEEDED");
    assertThat(JsonPath.<String>read(third.body(), "$.usedAmount")).isEqualTo("0.00256");
    assertThat(JsonPath.<String>read(third.body(), "$.limitAmount")).isEqualTo("0.004");
    assertThat(JsonPath.<String>read(third.body(), "$.error.type")).isEqualTo("insufficient_quota");
    assertThat(third.body()).doesNotContain(key);
    String report = keyReport(key);
    assertThat(JsonPath.<List<String>>read(report, "$.quotas[?(@.quota=='daily-spend')].usedAmount"))
        .containsExactly("0.00256");
    assertThat(assign(key, "{\"plan\":\"pro\"}").statusCode()).isEqualTo(200);
    // pro's monthly 5.00, on gpt-4o-mini (gpt-4o's 500 model tokens a minute are spent)
    assertThat(send(chat(key, body.replace("gpt-4o", "gpt-4o-mini"))).statusCode()).isEqualTo(200);
    assertThat(assign(key, "{\"plan\":null}").statusCode()).isEqualTo(200);
    HttpResponse<String> back = send(chat(key, body));
    assertThat(back.statusCode()).isEqualTo(429);
    assertThat(JsonPath.<String>read(back.body(), "$.reason")).isEqualTo("QUOTA_EXCEEDED");
  }

  private void awaitInFlight(String key, int slots) throws Exception {
    Awaitility.await("calls in flight").atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(10))
        .untilAsserted(() -> assertThat(JsonPath.<List<Integer>>read(keyReport(key),
            "$.budgets[?(@.budget=='chat' && @.model=='gpt-4o-mini')].inFlight"))
            .containsExactly(slots));
  }
}
