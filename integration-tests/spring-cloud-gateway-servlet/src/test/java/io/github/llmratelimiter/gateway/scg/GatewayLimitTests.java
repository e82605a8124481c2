package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * The proxied route {@code /v1/chat/**} is limited per API key and model: exactly the limit
 * reaches the upstream, sequentially and under concurrency; the next call is a 429 problem with
 * the rate-limit headers and never reaches the upstream; a keyless or malformed call is answered
 * by the gateway alone.
 */
class GatewayLimitTests extends GatewayTestSupport {

  @Test
  @ExtendWith(OutputCaptureExtension.class)
  void exactlyTheLimitPassesPerKeyAndModelThenA429ProblemWithHeaders(CapturedOutput output)
      throws Exception {
    String key = "sk-scg-sequence-000000001";
    for (int i = 1; i <= RPM; i++) {
      String body = chatBody("gpt-4o-mini", "call " + i, "\"max_tokens\":10");
      HttpResponse<String> ok = chat(key, body);
      assertThat(ok.statusCode()).as("call %d: %s", i, ok.body()).isEqualTo(200);
      assertThat(JsonPath.<String>read(ok.body(), "$.object")).isEqualTo("chat.completion");
      assertThat(JsonPath.<String>read(ok.body(), "$.choices[0].message.content"))
          .isEqualTo(OpenAiUpstream.REPLY);
      assertThat(ok.headers().firstValue("RateLimit-Policy"))
          .hasValue("\"chat\";q=" + RPM + ";w=60, \"chat-tokens\";q=" + TPM + ";qu=\"tokens\";w=60");
      assertThat(ok.headers().firstValue("RateLimit").orElseThrow())
          .startsWith("\"chat\";r=" + (RPM - i) + ";t=");
      assertThat(header(ok, "x-ratelimit-limit-requests")).isEqualTo(RPM);
      assertThat(header(ok, "x-ratelimit-remaining-requests")).isEqualTo(RPM - i);
      assertThat(ok.headers().firstValue("x-ratelimit-reset-requests")).isPresent();
      assertThat(header(ok, "x-ratelimit-limit-tokens")).isEqualTo(TPM);
      assertThat(ok.headers().firstValue("Retry-After")).isEmpty();
      // the upstream got the request as the client sent it, body and key included
      OpenAiUpstream.Received received = UPSTREAM.receivedContaining("\"call " + i + "\"").get(0);
      assertThat(received.body()).isEqualTo(body);
      assertThat(received.authorization()).isEqualTo("Bearer " + key);
      assertThat(received.path()).isEqualTo("/v1/chat/completions");
    }

    String deniedMarker = "denied-call-of-the-sequence";
    HttpResponse<String> denied = chat(key, chatBody("gpt-4o-mini", deniedMarker, ""));
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(denied.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(JsonPath.<String>read(denied.body(), "$.type"))
        .isEqualTo("urn:llmratelimiter:problem:rate-limited");
    assertThat(JsonPath.<Integer>read(denied.body(), "$.status")).isEqualTo(429);
    assertThat(JsonPath.<String>read(denied.body(), "$.reason")).isEqualTo("RPM_LIMIT");
    assertThat(JsonPath.<String>read(denied.body(), "$.policy")).isEqualTo("chat");
    assertThat(JsonPath.<String>read(denied.body(), "$.instance")).isEqualTo("/v1/chat/completions");
    assertThat(JsonPath.<Boolean>read(denied.body(), "$.retryable")).isTrue();
    assertThat(denied.body()).doesNotContain(key);
    assertThat(denied.headers().firstValue("RateLimit-Policy"))
        .hasValue("\"chat\";q=" + RPM + ";w=60, \"chat-tokens\";q=" + TPM + ";qu=\"tokens\";w=60");
    assertThat(denied.headers().firstValue("RateLimit").orElseThrow()).startsWith("\"chat\";r=0;t=");
    assertThat(header(denied, "x-ratelimit-limit-requests")).isEqualTo(RPM);
    assertThat(header(denied, "x-ratelimit-remaining-requests")).isZero();
    assertThat(denied.headers().firstValue("x-ratelimit-reset-requests")).isPresent();
    long retryAfterMs = header(denied, "retry-after-ms");
    assertThat(retryAfterMs).isBetween(1L, 60_000L);
    assertThat(header(denied, "Retry-After")).isEqualTo((retryAfterMs + 999) / 1000);
    assertThat(JsonPath.<Integer>read(denied.body(), "$.retryAfterMs").longValue())
        .isEqualTo(retryAfterMs);

    // the denied call never reached the upstream, which saw exactly the limit for this key
    assertThat(UPSTREAM.receivedContaining(deniedMarker)).isEmpty();
    assertThat(UPSTREAM.receivedFor(key)).hasSize(RPM);

    // another model of the same key has a budget of its own
    HttpResponse<String> otherModel = chat(key, chatBody("gpt-4o", "other model", ""));
    assertThat(otherModel.statusCode()).isEqualTo(200);
    assertThat(header(otherModel, "x-ratelimit-remaining-requests")).isEqualTo(RPM - 1);
    // and another key of the same model too
    assertThat(chat("sk-scg-sequence-000000002", chatBody("gpt-4o-mini", "other key", ""))
        .statusCode()).isEqualTo(200);
    assertThat(chat(key, chatBody("gpt-4o-mini", deniedMarker, "")).statusCode()).isEqualTo(429);
    assertThat(UPSTREAM.receivedContaining(deniedMarker)).isEmpty();
    assertThat(output.getAll()).doesNotContain(key);
  }

  @Test
  void concurrentCallsOfOneKeyAndModelPassExactlyTheLimit() throws Exception {
    String key = "sk-scg-concurrent-0000001";
    int callers = 60;
    List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
    for (int i = 0; i < callers; i++) {
      String body = chatBody("gpt-4o-mini", "concurrent " + i, "\"max_tokens\":10");
      calls.add(() -> chat(key, body));
    }
    int passed = 0;
    int denied = 0;
    for (HttpResponse<String> r : atOnce(calls)) {
      if (r.statusCode() == 200) {
        passed++;
      } else {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
        assertThat(JsonPath.<String>read(r.body(), "$.reason")).isEqualTo("RPM_LIMIT");
        assertThat(r.headers().firstValue("retry-after-ms")).isPresent();
        denied++;
      }
    }
    assertThat(passed).isEqualTo(RPM);
    assertThat(denied).isEqualTo(callers - RPM);
    assertThat(UPSTREAM.receivedFor(key)).hasSize(RPM);
  }

  @Test
  void keylessCallGets401AndNeverReachesTheUpstream() throws Exception {
    String marker = "keyless-call-marker";
    HttpResponse<String> r = chat(null, chatBody("gpt-4o-mini", marker, ""));
    assertThat(r.statusCode()).isEqualTo(401);
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(r.headers().firstValue("WWW-Authenticate")).hasValue("Bearer");
    assertThat(JsonPath.<Integer>read(r.body(), "$.status")).isEqualTo(401);
    assertThat(UPSTREAM.receivedContaining(marker)).isEmpty();
  }

  /** Bodies the limiter cannot charge correctly: the gateway answers each with a 400 problem, alone. */
  @ParameterizedTest
  @ValueSource(strings = {
      "{\"model\":\"gpt-4o-mini\",\"max_tokens\":-1,\"messages\":[{\"role\":\"user\",\"content\":\"invalid-marker\"}]}",
      "{\"model\":\"gpt-4o-mini\",\"n\":0,\"messages\":[{\"role\":\"user\",\"content\":\"invalid-marker\"}]}",
      "{\"model\":42,\"messages\":[{\"role\":\"user\",\"content\":\"invalid-marker\"}]}"})
  void invalidBodyGets400AndNeverReachesTheUpstream(String body) throws Exception {
    HttpResponse<String> r = chat("sk-scg-invalid-000000001", body);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(UPSTREAM.receivedContaining("invalid-marker")).isEmpty();
  }

  @Test
  void twoDifferentApiKeysGet400AndNeverReachTheUpstream() throws Exception {
    String marker = "two-keys-marker";
    HttpResponse<String> r = chatWithApiKeyHeader("sk-scg-first-key-0000001", "sk-scg-second-key-000002",
        chatBody("gpt-4o-mini", marker, ""));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(r.body()).doesNotContain("sk-scg-first-key-0000001").doesNotContain("sk-scg-second-key-000002");
    assertThat(UPSTREAM.receivedContaining(marker)).isEmpty();
  }
}
