package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.context.TestPropertySource;

/**
 * An upstream behind the reactive gateway's {@code RequestRateLimiter} filter ({@code
 * llmRateLimiter}, policy {@code chat}): the proxied provider's 429 with its {@code retry-after}
 * closes the upstream, and the next tenant's call is the filter's 429 with that retry time, never
 * reaching the provider; the provider's {@code x-ratelimit-*} headers pass through to the client.
 */
@ReactiveGatewayTest("filter")
@TestPropertySource(properties = {
    "ratelimiter.upstreams.stub.rpm=1000",
    "ratelimiter.upstreams.stub.policies=chat"})
class RequestRateLimiterUpstreamTests extends GatewayTestSupport {

  @Autowired
  RateLimitStore store;

  @Autowired
  UpstreamRoutes upstreams;

  @Test
  void theProxiedProviders429ClosesTheUpstreamUntilItsRetryAfter() throws Exception {
    HttpRequest first = HttpRequest.newBuilder(chatRequest("sk-rrl-upstream-first-001",
            chatBody("gpt-4o-mini", "rrl upstream first", "")), (name, value) -> true)
        .header("X-Stub-Status", "429")
        .header("X-Stub-Headers", "retry-after=20, x-ratelimit-remaining-requests=0")
        .build();
    assertThat(http.send(first, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(429);
    Upstream stub = upstreams.upstream("stub").orElseThrow();
    Awaitility.await("the report, which follows the response").atMost(SETTLE)
        .pollInterval(Duration.ofMillis(5)).until(() -> store.upstreamStatus(stub).closedForMs() > 0);
    assertThat(store.upstreamStatus(stub).closedForMs()).isBetween(1L, 20_000L);

    HttpResponse<String> denied = chat("sk-rrl-upstream-second-01",
        chatBody("gpt-4o-mini", "rrl-upstream-denied-marker", ""));
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(header(denied, "Retry-After")).isBetween(1L, 20L);
    assertThat(denied.headers().firstValue("RateLimit-Policy").orElseThrow()).startsWith("\"chat\"");
    assertThat(UPSTREAM.receivedContaining("rrl-upstream-denied-marker")).isEmpty();
  }
}
