package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.jayway.jsonpath.JsonPath;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Model tokens reserved for a proxied call are replaced by the usage the upstream reports, read
 * from the proxied response: a JSON body's {@code usage}, or the usage chunk of a stream. The
 * Actuator endpoint and the next call's headers show the usage, not the estimate.
 */
class GatewayTokenReconciliationTests extends GatewayTestSupport {

  /** Three prompt words, so the upstream reports 3 + 5 model tokens. */
  private static final String PROMPT = "one two three";

  private static final long USAGE = OpenAiUpstream.totalTokens(3);

  @Test
  void plainResponseUsageReplacesTheEstimate() throws Exception {
    String key = "sk-scg-tokens-plain-00001";
    String body = chatBody("gpt-4o-mini", PROMPT, "\"max_tokens\":50");
    HttpResponse<String> first = chat(key, body);
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(JsonPath.<Integer>read(first.body(), "$.usage.total_tokens").longValue()).isEqualTo(USAGE);
    long estimate = TPM - header(first, "x-ratelimit-remaining-tokens");
    assertThat(estimate).as("the estimate differs from the usage").isGreaterThan(USAGE);

    await().atMost(SETTLE).until(() -> chatBudget(key, "gpt-4o-mini", "modelTokensUsed") == USAGE);
    assertThat(actuator("/actuator/ratelimiter/" + key + "?model=gpt-4o-mini").body())
        .contains("\"key\":\"****0001\"").doesNotContain(key);

    HttpResponse<String> second = chat(key, body);
    assertThat(second.statusCode()).isEqualTo(200);
    assertThat(header(second, "x-ratelimit-remaining-tokens")).isEqualTo(TPM - USAGE - estimate);
    assertThat(second.headers().firstValue("RateLimit").orElseThrow())
        .contains("\"chat-tokens\";r=" + (TPM - USAGE - estimate) + ";");
    await().atMost(SETTLE).until(() -> chatBudget(key, "gpt-4o-mini", "modelTokensUsed") == 2 * USAGE);
  }

  @Test
  void streamedUsageChunkReplacesTheEstimate() throws Exception {
    String key = "sk-scg-tokens-stream-0001";
    String body = chatBody("gpt-4o", PROMPT,
        "\"max_tokens\":50,\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    HttpResponse<String> first = chat(key, body);
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(first.body()).contains("\"total_tokens\":" + USAGE).endsWith("data: [DONE]\n\n");
    long estimate = TPM - header(first, "x-ratelimit-remaining-tokens");
    assertThat(estimate).as("the estimate differs from the usage").isGreaterThan(USAGE);

    await().atMost(SETTLE).until(() -> chatBudget(key, "gpt-4o", "modelTokensUsed") == USAGE);

    HttpResponse<String> second = chat(key, body);
    assertThat(second.statusCode()).isEqualTo(200);
    assertThat(header(second, "x-ratelimit-remaining-tokens")).isEqualTo(TPM - USAGE - estimate);
    await().atMost(SETTLE).until(() -> chatBudget(key, "gpt-4o", "modelTokensUsed") == 2 * USAGE);
  }

  /**
   * A stream in flight holds its whole estimate: a call whose estimate does not fit beside it is
   * denied with {@code TPM_LIMIT} and never reaches the upstream; once the stream ends, its usage
   * replaces its estimate.
   */
  @Test
  void tpmDenyBesideAStreamInFlightNeverReachesTheUpstream() throws Exception {
    String key = "sk-scg-tokens-inflight-01";
    OpenAiUpstream.StreamGate gate = UPSTREAM.holdNextStream(key);
    HttpResponse<InputStream> stream = chatStream(key, chatBody("gpt-4o-mini", PROMPT,
        "\"max_tokens\":1200,\"stream\":true,\"stream_options\":{\"include_usage\":true}"));
    try (BufferedReader body = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
      assertThat(stream.statusCode()).isEqualTo(200);
      long estimate = TPM - header(stream, "x-ratelimit-remaining-tokens");
      assertThat(estimate).isGreaterThan(TPM / 2);
      assertThat(nextEvent(body)).isNotNull(); // the stream is in flight, held by the upstream

      String marker = "tpm-denied-marker";
      HttpResponse<String> denied = chat(key, chatBody("gpt-4o-mini", marker, "\"max_tokens\":1200"));
      assertThat(denied.statusCode()).as(denied.body()).isEqualTo(429);
      assertThat(JsonPath.<String>read(denied.body(), "$.reason")).isEqualTo("TPM_LIMIT");
      assertThat(header(denied, "x-ratelimit-remaining-tokens")).isEqualTo(TPM - estimate);
      assertThat(header(denied, "retry-after-ms")).isPositive();
      assertThat(UPSTREAM.receivedContaining(marker)).isEmpty();

      gate.release();
      String last = null;
      for (String e = nextEvent(body); e != null; e = nextEvent(body)) {
        last = e;
      }
      assertThat(last).isEqualTo("[DONE]");
    } finally {
      gate.release();
    }
    await().atMost(SETTLE).until(() -> chatBudget(key, "gpt-4o-mini", "modelTokensUsed") == USAGE);
    assertThat(chatBudget(key, "gpt-4o-mini", "windowUsed")).isEqualTo(1);
  }

  /**
   * A body the limiter cannot read as JSON is charged by its length (and, naming no model it can
   * read, to the key's budget without a model) and left to the upstream, whose error (without
   * usage) refunds the estimate; the request slot stays charged.
   */
  @Test
  void upstreamErrorWithoutUsageIsRefundedAndKeepsItsRequestSlot() throws Exception {
    String key = "sk-scg-tokens-error-00001";
    String marker = "malformed-json-marker";
    HttpResponse<String> r = chat(key, "{\"model\":\"gpt-4o-mini\",\"messages\":[\"" + marker + "\"");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400); // the upstream's answer
    assertThat(UPSTREAM.receivedContaining(marker)).hasSize(1);
    assertThat(TPM - header(r, "x-ratelimit-remaining-tokens")).as("the estimate").isPositive();

    // no model could be read from the body: the call is charged to the key's budget without one
    await().atMost(SETTLE).until(() -> chatBudget(key, null, "modelTokensUsed") == 0);
    assertThat(chatBudget(key, null, "windowUsed")).isEqualTo(1);
  }
}
