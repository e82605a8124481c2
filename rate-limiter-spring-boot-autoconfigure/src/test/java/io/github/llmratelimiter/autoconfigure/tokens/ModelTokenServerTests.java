package io.github.llmratelimiter.autoconfigure.tokens;

import static org.assertj.core.api.Assertions.assertThat;

import static io.github.llmratelimiter.autoconfigure.RawHttp.header;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.RawHttp.StreamStart;
import io.github.llmratelimiter.autoconfigure.RawHttp;
import io.github.llmratelimiter.autoconfigure.Reconciliations.Settled;
import io.github.llmratelimiter.autoconfigure.Reconciliations;
import io.github.llmratelimiter.autoconfigure.tokens.TokenGateway.StreamGate;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;

/**
 * Model-token budgets on a real server: streams settled from their usage chunk, from the estimate,
 * or refunded; a client that disconnects mid-stream; the overshoot bound under concurrent calls of
 * one tenant; the metrics and the Actuator endpoint. Time stands still (a manual ticker), so the
 * windows never slide during a test.
 */
@SpringBootTest(classes = ModelTokenServerTests.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "ratelimiter.policies.llm.rpm.limit=100000",
        "ratelimiter.policies.llm.tpm.limit=100",
        "ratelimiter.policies.bulk.rpm.limit=100000",
        "ratelimiter.policies.bulk.tpm.limit=1000",
        "ratelimiter.web.routes[0].include=/llm/**",
        "ratelimiter.web.routes[0].policy=llm",
        "ratelimiter.web.routes[1].include=/bulk/**",
        "ratelimiter.web.routes[1].policy=bulk",
        "management.endpoints.web.exposure.include=ratelimiter"})
@DirtiesContext
class ModelTokenServerTests {

  @LocalServerPort
  int port;

  @Autowired
  Reconciliations settled;

  @Autowired
  StreamGate gate;

  @Autowired
  RateLimitStore store;

  @Autowired
  RateLimitPolicies policies;

  @Autowired
  MeterRegistry meters;

  private final HttpClient http = HttpClient.newHttpClient();

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(TokenGateway.class)
  static class App {}

  @BeforeEach
  void forgetEarlierReconciliations() {
    settled.clear();
  }

  private HttpResponse<String> post(String path, String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
        .header("Authorization", "Bearer " + key)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(TokenGateway.BODY_OF_20))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private long used(String policy, String key) {
    return admin(store).inspect(policies.policy(policy).budgets(RateLimitKey.of(key, null)).get(0), key)
        .map(KeySnapshot::modelTokensUsed).orElse(0L);
  }

  @Test
  void streamEndingNormallyIsReconciledFromItsUsageChunk() throws Exception {
    String key = "sk-stream-usage-0000001";
    HttpResponse<String> r = post("/llm/stream?usage=9", key);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("x-ratelimit-remaining-tokens")).hasValue("80");
    assertThat(r.body()).contains("\"total_tokens\":9").endsWith("data: [DONE]\n\n");
    assertThat(settled.next()).isEqualTo(new Settled("llm", 20, 9));
    assertThat(used("llm", key)).isEqualTo(9);
  }

  @Test
  void streamWithoutAUsageChunkKeepsItsEstimate() throws Exception {
    String key = "sk-stream-nousage-00002";
    assertThat(post("/llm/stream", key).statusCode()).isEqualTo(200);
    assertThat(settled.next()).isEqualTo(new Settled("llm", 20, 20));
    assertThat(used("llm", key)).isEqualTo(20);
  }

  @Test
  void streamFailingUpstreamBeforeItsFirstByteIsRefunded() throws Exception {
    String key = "sk-stream-failing-00003";
    assertThat(post("/llm/stream?fail=true", key).statusCode()).isEqualTo(500);
    assertThat(settled.next()).isEqualTo(new Settled("llm", 20, 0));
    assertThat(used("llm", key)).isZero();
  }

  @Test
  void clientDisconnectingMidStreamIsChargedTheEstimateWhenTheStreamEnds() throws Exception {
    String key = "sk-stream-cancel-000004";
    byte[] body = TokenGateway.BODY_OF_20.getBytes(StandardCharsets.UTF_8);
    StreamStart start = RawHttp.firstEventThenReset(port, "POST /llm/stream?hold=true&usage=9 HTTP/1.1",
        List.of(header("Authorization", "Bearer " + key), header("Content-Type", "application/json"),
            header("Content-Length", Integer.toString(body.length))), body, () -> {
          assertThat(gate.firstChunkSent.await(10, TimeUnit.SECONDS)).isTrue();
          assertThat(gate.reservation.settled()).isFalse(); // the stream is still open
        });
    assertThat(start.statusLine()).isEqualTo("HTTP/1.1 200 ");
    assertThat(start.firstEvent()).startsWith("data: {\"choices\"");
    gate.clientGone.countDown();
    // the usage chunk never went out: the stream is settled with its estimate once it has ended
    assertThat(settled.next()).isEqualTo(new Settled("llm", 20, 20));
    assertThat(gate.reservation.settled()).isTrue();
    assertThat(used("llm", key)).isEqualTo(20);
  }

  /**
   * The documented bound: a key's model tokens in a window stay at or under {@code limit + C * d},
   * C the calls in flight at once and d the most one call's usage exceeds its estimate; with usage
   * never above the estimate, at or under the limit.
   */
  @Test
  void concurrentCallsOfOneTenantStayWithinTheDocumentedBound() throws Exception {
    int threads = 8;
    // usage 25 on an estimate of 20: each call under-estimated by 5
    long under = concurrentUntilDenied("sk-bulk-under-0000005", threads, 25);
    assertThat(under).isLessThanOrEqualTo(1000 + threads * 5L).isGreaterThan(1000 - 20);
    // usage 15 on an estimate of 20: never above the limit
    long over = concurrentUntilDenied("sk-bulk-over-00000006", threads, 15);
    assertThat(over).isLessThanOrEqualTo(1000).isGreaterThan(1000 - 20);
  }

  /** Runs callers of one key until each is denied; returns the usage charged (checked twice). */
  private long concurrentUntilDenied(String key, int threads, long usage) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Long>> served = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        served.add(pool.submit(() -> {
          start.await();
          long ok = 0;
          for (int i = 0; i < 1000; i++) {
            HttpResponse<String> r = post("/bulk/chat?usage=" + usage, key);
            if (r.statusCode() == 429) {
              assertThat(JsonPath.<String>read(r.body(), "$.reason")).isEqualTo("TPM_LIMIT");
              return ok;
            }
            assertThat(r.statusCode()).isEqualTo(200);
            ok++;
          }
          throw new AssertionError("never denied");
        }));
      }
      start.countDown();
      long calls = 0;
      for (Future<Long> f : served) {
        calls += f.get(60, TimeUnit.SECONDS);
      }
      for (long i = 0; i < calls; i++) {
        assertThat(settled.next().actual()).isEqualTo(usage);
      }
      long charged = used("bulk", key);
      assertThat(charged).isEqualTo(calls * usage); // every call settled, nothing lost or doubled
      return charged;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void metricsCountModelTokensPerPolicyAndReconciliationDeltas() throws Exception {
    String key = "sk-metrics-tokens-00007";
    double before = meters.counter("ratelimiter.model.tokens", "policy", "llm").count();
    assertThat(post("/llm/chat?usage=12", key).statusCode()).isEqualTo(200);
    assertThat(post("/llm/chat?usage=26", key).statusCode()).isEqualTo(200);
    settled.next();
    settled.next();
    assertThat(meters.counter("ratelimiter.model.tokens", "policy", "llm").count() - before)
        .isEqualTo(12 + 26);
    DistributionSummary over = meters.find("ratelimiter.model.tokens.reconcile.delta")
        .tags("policy", "llm", "direction", "over").summary();
    DistributionSummary under = meters.find("ratelimiter.model.tokens.reconcile.delta")
        .tags("policy", "llm", "direction", "under").summary();
    assertThat(over).isNotNull();
    assertThat(under).isNotNull();
    assertThat(over.max()).isGreaterThanOrEqualTo(8);
    assertThat(under.max()).isGreaterThanOrEqualTo(6);
    assertThat(meters.getMeters()).allSatisfy(m ->
        assertThat(m.getId().getTags()).noneMatch(t -> t.getValue().contains(key)));

    HttpResponse<String> state = http.send(HttpRequest.newBuilder(
        URI.create("http://localhost:" + port + "/actuator/ratelimiter/" + key))
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(JsonPath.<List<Integer>>read(state.body(), "$.budgets[?(@.budget=='llm')].modelTokensUsed"))
        .containsExactly(12 + 26);
    assertThat(JsonPath.<List<Integer>>read(state.body(), "$.budgets[?(@.budget=='llm')].modelTokenLimit"))
        .containsExactly(100);
    HttpResponse<String> report = http.send(HttpRequest.newBuilder(
        URI.create("http://localhost:" + port + "/actuator/ratelimiter")).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(JsonPath.<Integer>read(report.body(), "$.policies.llm.levels[0].budget.tpmLimit"))
        .isEqualTo(100);
    assertThat(state.body()).doesNotContain(key);
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
