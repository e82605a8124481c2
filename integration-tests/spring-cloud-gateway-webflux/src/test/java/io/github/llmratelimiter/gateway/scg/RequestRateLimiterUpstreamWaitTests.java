package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.context.TestPropertySource;

/**
 * Waiting for an upstream behind the reactive gateway's {@code RequestRateLimiter} filter: the
 * proxied provider's 429 closes the upstream for a second; the next tenant's call waits for it
 * (policy {@code chat} waits up to 5 s) instead of the filter's 429, and reaches the provider once
 * the upstream opens again. Real time passes here (the provider's second); waits are bounded.
 */
@ReactiveGatewayTest("filter")
@TestPropertySource(properties = {
    "ratelimiter.upstreams.stub.rpm=1000",
    "ratelimiter.upstreams.stub.policies=chat",
    "ratelimiter.policies.chat.max-wait=5s"})
class RequestRateLimiterUpstreamWaitTests extends GatewayTestSupport {

  @Autowired
  RateLimitStore store;

  @Autowired
  UpstreamRoutes upstreams;

  @Autowired
  UpstreamWaitingRoom room;

  @Test
  void aCallThatFindsTheUpstreamClosedWaitsAndPassesOnceItOpens() throws Exception {
    HttpRequest first = HttpRequest.newBuilder(chatRequest("sk-rrl-wait-first-000001",
            chatBody("gpt-4o-mini", "rrl wait first", "")), (name, value) -> true)
        .header("X-Stub-Status", "429")
        .header("X-Stub-Headers", "retry-after=1")
        .build();
    assertThat(http.send(first, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(429);
    Upstream stub = upstreams.upstream("stub").orElseThrow();
    Awaitility.await("the report, which follows the response").atMost(SETTLE)
        .pollInterval(Duration.ofMillis(5)).until(() -> store.upstreamStatus(stub).closedForMs() > 0);
    assertThat(store.upstreamStatus(stub).closedForMs()).isBetween(1L, 1_000L);

    CompletableFuture<HttpResponse<String>> waiting = http.sendAsync(
        chatRequest("sk-rrl-wait-second-00001", chatBody("gpt-4o-mini", "rrl-wait-marker", "")),
        HttpResponse.BodyHandlers.ofString());
    // the call is in the room while the upstream stays closed (about a second): seen there before
    // it passes
    AtomicBoolean seenWaiting = new AtomicBoolean();
    Awaitility.await("it waited in the room").atMost(SETTLE).pollInterval(Duration.ofMillis(2))
        .until(() -> {
          if (room.waiting("stub") == 1) {
            seenWaiting.set(true);
          }
          return seenWaiting.get() || waiting.isDone();
        });
    assertThat(seenWaiting).as("it waited in the room").isTrue();
    HttpResponse<String> passed = waiting.get(10, TimeUnit.SECONDS);
    assertThat(passed.statusCode()).as(passed.body()).isEqualTo(200);
    assertThat(UPSTREAM.receivedContaining("rrl-wait-marker")).hasSize(1);
    assertThat(room.waiting("stub")).isZero();
  }
}
