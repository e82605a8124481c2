package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The MVC gateway's scenarios, run against the reactive gateway limited by {@code
 * ratelimiter.web.routes} ({@code application-routes.yml}): limits per API key and model with the
 * 429 problem and headers, 401 for a keyless call, 400 for a body the limiter cannot charge, stream
 * passthrough, and model tokens reconciled from the proxied usage, plain and streamed. And the
 * failures of the {@code RequestRateLimiter} filter naming {@code llmRateLimiter} that are not a
 * rate-limit deny, answered with the same problem bodies as every front door.
 */
class ReactiveWebRoutesTests {

  /** Limits per key and model, 429/401/400 problems, never reaching the upstream when denied. */
  @Nested
  @ReactiveGatewayTest("routes")
  class Limits extends GatewayLimitTests {}

  /** A stream passes chunk by chunk and ends with {@code data: [DONE]}. */
  @Nested
  @ReactiveGatewayTest("routes")
  class Streaming extends GatewayStreamingTests {}

  /** The proxied usage, plain or the stream's usage chunk, replaces the estimate. */
  @Nested
  @ReactiveGatewayTest("routes")
  class TokenReconciliation extends GatewayTokenReconciliationTests {}

  /**
   * Through the {@code RequestRateLimiter} filter: a request that carries two different API keys is
   * an error signal of {@code llmApiKeyResolver}, answered with the 400 problem, charged to neither
   * key and never proxied.
   */
  @Nested
  @ReactiveGatewayTest("filter")
  class RequestRateLimiterFailures extends GatewayTestSupport {

    @Test
    void twoDifferentApiKeysGetThe400Problem() throws Exception {
      String marker = "rrl-two-keys-marker";
      HttpResponse<String> r = chatWithApiKeyHeader("sk-rrl-first-key-000001", "sk-rrl-second-key-00002",
          chatBody("gpt-4o-mini", marker, ""));
      assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
      assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      assertThat(JsonPath.<Integer>read(r.body(), "$.status")).isEqualTo(400);
      assertThat(r.body()).doesNotContain("sk-rrl-first-key-000001")
          .doesNotContain("sk-rrl-second-key-00002");
      assertThat(UPSTREAM.receivedContaining(marker)).isEmpty();
      assertThat(chatBudget("sk-rrl-first-key-000001", null, "windowUsed")).isEqualTo(-1);
    }
  }
}
