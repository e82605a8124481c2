package io.github.llmratelimiter.autoconfigure.endpoint;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.gateway.TestHmac;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;

/** A real server: the Actuator endpoint's JSON (masked keys, counts, reset) and the metrics. */
@SpringBootTest(classes = RateLimiterServerTests.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "ratelimiter.policies.routed.rpm.limit=3",
        "ratelimiter.policies.annotated.rpm.limit=2",
        "ratelimiter.web.routes[0].include=/v1/**",
        "ratelimiter.web.routes[0].policy=routed",
        "management.endpoints.web.exposure.include=ratelimiter",
        "management.endpoint.ratelimiter.access=unrestricted",
        "ratelimiter.key-id-secret=" + RateLimiterServerTests.SECRET})
@DirtiesContext
class RateLimiterServerTests {

  static final String KEY = "sk-live-secret-9f8e7d6c";
  static final String OTHER = "sk-live-other-00001111";
  static final String SECRET = "server-test-key-id-secret";

  @LocalServerPort
  int port;

  @Autowired
  MeterRegistry meters;

  private final HttpClient http = HttpClient.newHttpClient();

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(TestGateway.class)
  static class App {}

  HttpResponse<String> send(String method, String path, String key) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
        .method(method, HttpRequest.BodyPublishers.noBody());
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    return http.send(b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void endpointShowsMaskedKeysAndCountsAndResetsOneKey() throws Exception {
    assertThat(send("GET", "/v1/routed", KEY).statusCode()).isEqualTo(200);
    assertThat(send("GET", "/v1/routed", KEY).statusCode()).isEqualTo(200);
    assertThat(send("GET", "/v1/routed", OTHER).statusCode()).isEqualTo(200);

    HttpResponse<String> report = send("GET", "/actuator/ratelimiter", null);
    assertThat(report.statusCode()).isEqualTo(200);
    String json = report.body();
    assertThat(json).doesNotContain(KEY).doesNotContain(OTHER);
    assertThat(JsonPath.<String>read(json, "$.composition")).isEqualTo("reserve-commit");
    assertThat(JsonPath.<String>read(json, "$.store")).isEqualTo("InMemoryStore");
    assertThat(JsonPath.<Integer>read(json, "$.policies.routed.levels[0].budget.rpmLimit")).isEqualTo(3);
    List<Integer> tracked = JsonPath.read(json, "$.budgets[?(@.budget=='routed')].trackedKeys");
    assertThat(tracked).containsExactly(2);
    List<String> keys = JsonPath.read(json, "$.budgets[?(@.budget=='routed')].top[*].key");
    assertThat(keys).containsExactly("****7d6c", "****1111");
    List<Integer> used = JsonPath.read(json, "$.budgets[?(@.budget=='routed')].top[*].windowUsed");
    assertThat(used).containsExactly(2, 1);
    List<String> ids = JsonPath.read(json, "$.budgets[?(@.budget=='routed')].top[0].id");
    assertThat(ids).containsExactly(TestHmac.hex16(SECRET, KEY));

    String top1 = send("GET", "/actuator/ratelimiter?top=1", null).body();
    assertThat(JsonPath.<List<String>>read(top1, "$.budgets[?(@.budget=='routed')].top[*].key"))
        .containsExactly("****7d6c");

    HttpResponse<String> one = send("GET", "/actuator/ratelimiter/" + TestHmac.hex16(SECRET, KEY), null);
    assertThat(one.statusCode()).isEqualTo(200);
    assertThat(one.body()).doesNotContain(KEY);
    assertThat(JsonPath.<String>read(one.body(), "$.key")).isEqualTo("****7d6c");
    assertThat(JsonPath.<List<Integer>>read(one.body(), "$.budgets[?(@.budget=='routed')].windowUsed"))
        .containsExactly(2);
    assertThat(send("GET", "/actuator/ratelimiter/sk-never-seen-000000", null).statusCode()).isEqualTo(404);

    HttpResponse<String> reset = send("DELETE", "/actuator/ratelimiter/" + KEY, null);
    assertThat(reset.statusCode()).isEqualTo(200);
    assertThat(JsonPath.<Integer>read(reset.body(), "$.reset")).isEqualTo(1);
    assertThat(reset.body()).doesNotContain(KEY);
    assertThat(send("GET", "/v1/routed", KEY).headers().firstValue("x-ratelimit-remaining-requests"))
        .hasValue("2");

    // by id: the id the report showed names the key
    HttpResponse<String> byId = send("DELETE", "/actuator/ratelimiter/" + TestHmac.hex16(SECRET, OTHER), null);
    assertThat(byId.statusCode()).isEqualTo(200);
    assertThat(JsonPath.<Integer>read(byId.body(), "$.reset")).isEqualTo(1);
    assertThat(JsonPath.<String>read(byId.body(), "$.id")).isEqualTo(TestHmac.hex16(SECRET, OTHER));
    assertThat(send("GET", "/actuator/ratelimiter/" + TestHmac.hex16(SECRET, OTHER), null).statusCode())
        .isEqualTo(404);    assertThat(send("GET", "/v1/routed", OTHER).headers().firstValue("x-ratelimit-remaining-requests"))
        .hasValue("2");
  }

  @Test
  void metricsCountDecisionsWithoutPerTenantTags() throws Exception {
    String key = "sk-metrics-tenant-4242";
    double allowedBefore = count("routed", "allowed", "OK");
    for (int i = 0; i < 3; i++) {
      assertThat(send("GET", "/v1/routed", key).statusCode()).isEqualTo(200);
    }
    assertThat(send("GET", "/v1/routed", key).statusCode()).isEqualTo(429);
    assertThat(count("routed", "allowed", "OK") - allowedBefore).isEqualTo(3);
    assertThat(count("routed", "denied", "RPM_LIMIT")).isEqualTo(1);
    assertThat(meters.get("ratelimiter.decision.latency").tag("policy", "routed").timer().count())
        .isGreaterThanOrEqualTo(4);
    assertThat(meters.get("ratelimiter.keys.tracked").tag("budget", "routed").gauge().value())
        .isGreaterThanOrEqualTo(1);
    for (Meter m : meters.getMeters()) {
      if (m.getId().getName().startsWith("ratelimiter")) {
        assertThat(m.getId().getTags()).noneMatch(t -> t.getValue().contains("sk-"));
      }
    }
  }

  private double count(String policy, String result, String reason) {
    var counter = meters.find("ratelimiter.decisions")
        .tags("policy", policy, "result", result, "reason", reason).counter();
    return counter == null ? 0 : counter.count();
  }
}
