package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * The reactive gateway's route {@code /v1/**} limited by Spring Cloud Gateway's {@code
 * RequestRateLimiter} filter naming the starter's {@code llmRateLimiter} (policy {@code chat}) and
 * {@code llmApiKeyResolver}, on the in-memory store: exactly the limit reaches the upstream,
 * sequentially and under concurrency; the next call is the filter's 429 with the starter's headers
 * and never reaches the upstream; a keyless call is the filter's empty-key status, 401 here.
 */
@ReactiveGatewayTest("filter")
class RequestRateLimiterTests extends GatewayTestSupport {

  private static final String POLICY_HEADER =
      "\"chat\";q=" + RPM + ";w=60, \"chat-tokens\";q=" + TPM + ";qu=\"tokens\";w=60";

  @Test
  @ExtendWith(OutputCaptureExtension.class)
  void exactlyTheLimitPassesThenA429WithTheLimiterHeadersThatNeverReachesTheUpstream(
      CapturedOutput output) throws Exception {
    String key = "sk-rrl-sequence-000000001";
    for (int i = 1; i <= RPM; i++) {
      String body = chatBody("gpt-4o-mini", "rrl call " + i, "\"max_tokens\":10");
      HttpResponse<String> ok = chat(key, body);
      assertThat(ok.statusCode()).as("call %d: %s", i, ok.body()).isEqualTo(200);
      assertThat(JsonPath.<String>read(ok.body(), "$.choices[0].message.content"))
          .isEqualTo(OpenAiUpstream.REPLY);
      assertThat(ok.headers().firstValue("RateLimit-Policy")).hasValue(POLICY_HEADER);
      assertThat(ok.headers().firstValue("RateLimit").orElseThrow())
          .startsWith("\"chat\";r=" + (RPM - i) + ";t=");
      assertThat(header(ok, "x-ratelimit-limit-requests")).isEqualTo(RPM);
      assertThat(header(ok, "x-ratelimit-remaining-requests")).isEqualTo(RPM - i);
      assertThat(ok.headers().firstValue("x-ratelimit-reset-requests")).isPresent();
      // the filter shows the limiter no body: no model tokens are reserved
      assertThat(header(ok, "x-ratelimit-remaining-tokens")).isEqualTo(TPM);
      assertThat(ok.headers().firstValue("Retry-After")).isEmpty();
      // none of the gateway's own RedisRateLimiter headers
      assertThat(ok.headers().firstValue("X-RateLimit-Remaining")).isEmpty();
      OpenAiUpstream.Received received = UPSTREAM.receivedContaining("\"rrl call " + i + "\"").get(0);
      assertThat(received.body()).isEqualTo(body);
      assertThat(received.authorization()).isEqualTo("Bearer " + key);
    }

    String deniedMarker = "rrl-denied-marker";
    HttpResponse<String> denied = chat(key, chatBody("gpt-4o-mini", deniedMarker, ""));
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(denied.body()).isEmpty(); // the filter writes no body
    assertThat(denied.headers().firstValue("RateLimit-Policy")).hasValue(POLICY_HEADER);
    assertThat(denied.headers().firstValue("RateLimit").orElseThrow()).startsWith("\"chat\";r=0;t=");
    assertThat(header(denied, "x-ratelimit-remaining-requests")).isZero();
    long retryAfterMs = header(denied, "retry-after-ms");
    assertThat(retryAfterMs).isBetween(1L, 60_000L);
    assertThat(header(denied, "Retry-After")).isEqualTo((retryAfterMs + 999) / 1000);

    assertThat(UPSTREAM.receivedContaining(deniedMarker)).isEmpty();
    assertThat(UPSTREAM.receivedFor(key)).hasSize(RPM);
    // the starter's store counted them: one budget per API key, without a model (none configured)
    assertThat(chatBudget(key, null, "windowUsed")).isEqualTo(RPM);
    assertThat(output.getAll()).doesNotContain(key);
  }

  @Test
  void concurrentCallsOfOneKeyPassExactlyTheLimit() throws Exception {
    String key = "sk-rrl-concurrent-0000001";
    List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      String body = chatBody("gpt-4o-mini", "rrl concurrent " + i, "\"max_tokens\":10");
      calls.add(() -> chat(key, body));
    }
    int passed = 0;
    for (HttpResponse<String> r : atOnce(calls)) {
      if (r.statusCode() == 200) {
        passed++;
      } else {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
        assertThat(header(r, "x-ratelimit-remaining-requests")).isZero();
        assertThat(r.headers().firstValue("retry-after-ms")).isPresent();
      }
    }
    assertThat(passed).isEqualTo(RPM);
    assertThat(UPSTREAM.receivedFor(key)).hasSize(RPM);
  }

  @Test
  void keylessCallGetsTheEmptyKeyStatusAndNeverReachesTheUpstream() throws Exception {
    String marker = "rrl-keyless-marker";
    HttpResponse<String> r = chat(null, chatBody("gpt-4o-mini", marker, ""));
    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(r.headers().firstValue("RateLimit")).isEmpty();
    assertThat(UPSTREAM.receivedContaining(marker)).isEmpty();
  }

  /** The starter's key resolver reads {@code X-API-Key} as well: one key, one budget. */
  @Test
  void bearerAndXApiKeyOfOneKeyShareItsBudget() throws Exception {
    String key = "sk-rrl-two-headers-000001";
    assertThat(header(chat(key, chatBody("gpt-4o-mini", "rrl bearer", "")),
        "x-ratelimit-remaining-requests")).isEqualTo(RPM - 1);
    HttpResponse<String> viaHeader =
        chatWithApiKeyHeader(null, key, chatBody("gpt-4o-mini", "rrl x-api-key", ""));
    assertThat(viaHeader.statusCode()).isEqualTo(200);
    assertThat(header(viaHeader, "x-ratelimit-remaining-requests")).isEqualTo(RPM - 2);
  }
}
