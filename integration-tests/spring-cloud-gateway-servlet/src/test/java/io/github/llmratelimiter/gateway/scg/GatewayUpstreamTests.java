package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
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
 * An upstream behind the MVC gateway's proxy ({@code ratelimiter.web.routes}): the proxied
 * provider's {@code x-ratelimit-remaining-requests: 0} with its reset closes the upstream for the
 * next tenant, whose call is refused before it reaches the provider.
 */
@TestPropertySource(properties = {
    "ratelimiter.upstreams.stub.rpm=1000",
    "ratelimiter.upstreams.stub.models=gpt-4o*"})
class GatewayUpstreamTests extends GatewayTestSupport {

  @Autowired
  RateLimitStore store;

  @Autowired
  UpstreamRoutes upstreams;

  @Test
  void theProxiedProvidersRemainingZeroClosesTheUpstreamForTheNextTenant() throws Exception {
    HttpRequest first = HttpRequest.newBuilder(chatRequest(key("sk-upstream-first-000001"),
            chatBody("gpt-4o-mini", "upstream first", "")), (name, value) -> true)
        .header("X-Stub-Headers", "x-ratelimit-remaining-requests=0, x-ratelimit-reset-requests=30s")
        .build();
    assertThat(http.send(first, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    Upstream stub = upstreams.upstream("stub").orElseThrow();
    Awaitility.await("the report, which follows the response").atMost(SETTLE)
        .pollInterval(Duration.ofMillis(5)).until(() -> store.upstreamStatus(stub).closedForMs() > 0);
    assertThat(store.upstreamStatus(stub).closedForMs()).isBetween(1L, 30_000L);

    HttpResponse<String> denied = chat(key("sk-upstream-second-00001"),
        chatBody("gpt-4o-mini", "upstream-denied-marker", ""));
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(JsonPath.<String>read(denied.body(), "$.reason")).isEqualTo("UPSTREAM_LIMIT");
    assertThat(header(denied, "Retry-After")).isBetween(1L, 30L);
    assertThat(UPSTREAM.receivedContaining("upstream-denied-marker")).isEmpty();
  }
}
