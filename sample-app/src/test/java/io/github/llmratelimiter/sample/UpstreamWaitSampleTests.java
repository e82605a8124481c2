package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.ActiveProfiles;

/**
 * The "upstream" profile over HTTP: the stand-in account takes one call at a time, so three
 * tenants' streams sent at once pass one after the other, the later ones waiting instead of a
 * 429; the stand-in provider's headers, reported by the controller, teach the gateway its lower
 * limit.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles("upstream")
class UpstreamWaitSampleTests {

  @LocalServerPort
  int port;

  @Autowired
  MeterRegistry meters;

  @Autowired
  RateLimitStore store;

  @Autowired
  UpstreamRoutes routes;

  private final HttpClient http = HttpClient.newHttpClient();

  private CompletableFuture<HttpResponse<String>> stream(String key) {
    return http.sendAsync(HttpRequest.newBuilder(
            URI.create("http://localhost:" + port + "/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .header("Authorization", "Bearer " + key)
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"gpt-4o-mini\",\"stream\":true,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"one two three\"}]}"))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private long admittedAfterWaiting() {
    Timer t = meters.find("ratelimiter.upstream.wait").tag("upstream", "stand-in")
        .tag("outcome", "admitted").timer();
    return t == null ? 0 : t.count();
  }

  @Test
  void threeTenantsStreamsAtOncePassOneAfterTheOtherInsteadOfA429() throws Exception {
    long before = admittedAfterWaiting();
    List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
    for (int tenant = 1; tenant <= 3; tenant++) {
      calls.add(stream("sk-upstream-tenant-000000" + tenant));
    }
    for (CompletableFuture<HttpResponse<String>> call : calls) {
      HttpResponse<String> r = call.get(30, TimeUnit.SECONDS);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      assertThat(r.body()).contains("[DONE]");
    }
    // one call at a time: two of the three found the account busy, waited and passed
    assertThat(admittedAfterWaiting()).isEqualTo(before + 2);
    UpstreamStatus status = store.upstreamStatus(routes.upstream("stand-in").orElseThrow());
    assertThat(status.requestsLimit()).as("the provider's 20 a minute, not the configured 30")
        .isEqualTo(20);
    assertThat(status.reportedRequestsRemaining()).isNotNull();
  }
}
