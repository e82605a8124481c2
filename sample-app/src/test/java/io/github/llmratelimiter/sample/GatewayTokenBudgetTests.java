package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.jayway.jsonpath.JsonPath;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * The sample's tokens-per-minute budget (500 model tokens a minute per key and model on "chat")
 * over plain HTTP: the curl loop of sample-app/README.md, streams settled from their usage chunk or
 * their estimate, and a failed upstream call refunded.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class GatewayTokenBudgetTests {

  /** 100 words: 599 bytes of text. */
  static final String HUNDRED_WORDS = String.join(" ", java.util.Collections.nCopies(100, "token"));

  @LocalServerPort
  int port;

  @LocalManagementPort
  int managementPort;

  private final HttpClient http = HttpClient.newHttpClient();

  /** The echo model, except that a prompt of "fail upstream" fails like a provider outage. */
  @TestConfiguration
  static class FailingUpstream {
    @Bean
    @Primary
    ChatModel failingOnRequest() {
      ChatModel echo = new EchoChatModel(new StandInProvider(0, 0, java.time.InstantSource.system()));
      return request -> {
        if (request.messages().stream().anyMatch(m -> m.text().equals("fail upstream"))) {
          throw new IllegalStateException("provider timed out");
        }
        return echo.complete(request);
      };
    }
  }

  private HttpResponse<String> chat(String key, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .header("Authorization", "Bearer " + key)
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private long chatBudget(String key, String field) throws Exception {
    String json = http.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + managementPort + "/actuator/ratelimiter/" + key))
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    List<Number> values = JsonPath.read(json, "$.budgets[?(@.budget=='chat')]." + field);
    return values.isEmpty() ? 0 : values.get(0).longValue();
  }

  @Test
  void readmeLoopReservesTheEstimateChargesTheUsageAndDeniesWhenTheNextEstimateDoesNotFit()
      throws Exception {
    String key = "sk-readme-tpm-0000000001";
    String body = "{\"model\":\"gpt-4o-mini\",\"max_tokens\":120,"
        + "\"messages\":[{\"role\":\"user\",\"content\":\"" + HUNDRED_WORDS + "\"}]}";
    // estimate: ceil((4 + 599 bytes) / 4) = 151, + 4 per message + 3 per request + max_tokens 120
    long estimate = 151 + 4 + 3 + 120;
    // usage: 100 prompt words + 103 reply words ("Echo from gpt-4o-mini: " and the 100)
    long usage = 100 + 103;

    HttpResponse<String> first = chat(key, body);
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(JsonPath.<Integer>read(first.body(), "$.usage.total_tokens")).isEqualTo((int) usage);
    assertThat(first.headers().firstValue("x-ratelimit-limit-tokens")).hasValue("500");
    assertThat(first.headers().firstValue("x-ratelimit-remaining-tokens")).hasValue(Long.toString(500 - estimate));
    assertThat(first.headers().firstValue("x-ratelimit-remaining-requests")).hasValue("4");
    assertThat(first.headers().firstValue("RateLimit").orElseThrow())
        // each item its own budget: 4 of 5 in the window, 1 of 2 slots (this call holds one)
        .contains("\"chat\";r=4;t=60", "\"chat-concurrency\";r=1",
            "\"chat-tokens\";r=" + (500 - estimate) + ";t=60");
    await().atMost(Duration.ofSeconds(10)).until(() -> chatBudget(key, "modelTokensUsed") == usage);

    HttpResponse<String> second = chat(key, body);
    assertThat(second.statusCode()).isEqualTo(200);
    assertThat(second.headers().firstValue("x-ratelimit-remaining-tokens"))
        .hasValue(Long.toString(500 - usage - estimate));
    await().atMost(Duration.ofSeconds(10)).until(() -> chatBudget(key, "modelTokensUsed") == 2 * usage);

    HttpResponse<String> third = chat(key, body);
    assertThat(third.statusCode()).isEqualTo(429);
    assertThat(JsonPath.<String>read(third.body(), "$.reason")).isEqualTo("TPM_LIMIT");
    assertThat(JsonPath.<String>read(third.body(), "$.error.code")).isEqualTo("rate_limit_exceeded");
    assertThat(JsonPath.<String>read(third.body(), "$.error.type")).isEqualTo("tokens");
    assertThat(third.headers().firstValue("x-ratelimit-remaining-tokens")).hasValue(Long.toString(500 - 2 * usage));
    long retryMs = Long.parseLong(third.headers().firstValue("retry-after-ms").orElseThrow());
    assertThat(retryMs).isBetween(50_000L, 60_000L); // when the first call's usage leaves the window
    assertThat(third.headers().firstValue("Retry-After")).hasValue(Long.toString((retryMs + 999) / 1000));
    // reserve-commit: the TPM deny charged no level
    assertThat(chatBudget(key, "windowUsed")).isEqualTo(2);
  }

  @Test
  void streamWithIncludeUsageIsSettledFromItsUsageChunk() throws Exception {
    String key = "sk-stream-tpm-0000000002";
    HttpResponse<String> r = chat(key, "{\"model\":\"gpt-4o-mini\",\"stream\":true,"
        + "\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"a b\"}]}");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).contains("\"total_tokens\":7");
    // "a b" is 2 prompt words; the reply "Echo from gpt-4o-mini: a b" 5
    await().atMost(Duration.ofSeconds(10)).until(() -> chatBudget(key, "modelTokensUsed") == 7);
  }

  @Test
  void streamWithoutUsageKeepsItsEstimate() throws Exception {
    String key = "sk-stream-tpm-0000000003";
    HttpResponse<String> r = chat(key, "{\"model\":\"gpt-4o-mini\",\"stream\":true,"
        + "\"messages\":[{\"role\":\"user\",\"content\":\"a b\"}]}");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).doesNotContain("\"usage\"");
    // ceil((4 + 3 bytes) / 4) = 2, + 4 + 3, + default-completion-tokens 64 (application.yml)
    long estimate = 2 + 4 + 3 + 64;
    assertThat(r.headers().firstValue("x-ratelimit-remaining-tokens")).hasValue(Long.toString(500 - estimate));
    // settled when the stream ends: the estimate stays (a settled count equals the reservation)
    await().atMost(Duration.ofSeconds(10)).until(() -> chatBudget(key, "modelTokensUsed") == estimate);
  }

  @Test
  void failedUpstreamCallIsRefundedAndKeepsItsRequestSlot() throws Exception {
    String key = "sk-upstream-tpm-00000004";
    HttpResponse<String> r = chat(key, "{\"model\":\"gpt-4o-mini\",\"max_tokens\":50,"
        + "\"messages\":[{\"role\":\"user\",\"content\":\"fail upstream\"}]}");
    assertThat(r.statusCode()).isEqualTo(502);
    assertThat(JsonPath.<String>read(r.body(), "$.error.code")).isEqualTo("upstream_error");
    assertThat(r.headers().firstValue("x-ratelimit-remaining-tokens")).isPresent();
    await().atMost(Duration.ofSeconds(10)).until(() -> chatBudget(key, "modelTokensUsed") == 0);
    assertThat(chatBudget(key, "windowUsed")).isEqualTo(1);
  }
}
