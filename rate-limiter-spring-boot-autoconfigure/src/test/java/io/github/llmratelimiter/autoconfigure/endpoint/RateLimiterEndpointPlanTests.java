package io.github.llmratelimiter.autoconfigure.endpoint;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/**
 * A real server: {@code POST /actuator/ratelimiter/{key}} assigns and clears a plan, which the next
 * call carries; {@code GET} shows the plan and its effective limits; an unknown plan or a malformed
 * body is a 4xx, and no answer shows the key in clear.
 */
@SpringBootTest(classes = RateLimiterServerTests.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "ratelimiter.policies.routed.rpm.limit=2",
        "ratelimiter.policies.annotated.rpm.limit=2",
        "ratelimiter.web.routes[0].include=/v1/**",
        "ratelimiter.web.routes[0].policy=routed",
        "ratelimiter.default-plan=free",
        "ratelimiter.plans.free.policies.routed.rpm.limit=2",
        "ratelimiter.plans.pro.policies.routed.rpm.limit=20",
        "management.endpoints.web.exposure.include=ratelimiter",
        "management.endpoint.ratelimiter.access=unrestricted"})
@DirtiesContext
class RateLimiterEndpointPlanTests {

  private static final String KEY = "sk-plan-endpoint-5a6b7c8d";

  @LocalServerPort
  int port;

  @Autowired
  MeterRegistry meters;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> call() throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/routed"))
        .header("Authorization", "Bearer " + KEY)
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(String body) throws Exception {
    return http.send(HttpRequest.newBuilder(
            URI.create("http://localhost:" + port + "/actuator/ratelimiter/" + KEY))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get() throws Exception {
    return http.send(HttpRequest.newBuilder(
        URI.create("http://localhost:" + port + "/actuator/ratelimiter/" + KEY))
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aPlanAssignedThroughTheEndpointAppliesToTheNextCallAndIsShown() throws Exception {
    assertThat(call().statusCode()).isEqualTo(200);
    assertThat(call().statusCode()).isEqualTo(200);
    assertThat(call().statusCode()).isEqualTo(429);
    HttpResponse<String> before = get();
    assertThat(JsonPath.<String>read(before.body(), "$.plan")).isEqualTo("free");
    assertThat(JsonPath.<Boolean>read(before.body(), "$.assigned")).isFalse();

    HttpResponse<String> assigned = post("{\"plan\":\"pro\"}");
    assertThat(assigned.statusCode()).isEqualTo(200);
    assertThat(assigned.body()).doesNotContain(KEY);
    assertThat(JsonPath.<String>read(assigned.body(), "$.plan")).isEqualTo("pro");
    assertThat(JsonPath.<String>read(assigned.body(), "$.key")).isEqualTo("****7c8d");

    HttpResponse<String> admitted = call();
    assertThat(admitted.statusCode()).isEqualTo(200);
    assertThat(admitted.headers().firstValue("x-ratelimit-limit-requests")).hasValue("20");
    HttpResponse<String> shown = get();
    assertThat(shown.body()).doesNotContain(KEY);
    assertThat(JsonPath.<String>read(shown.body(), "$.plan")).isEqualTo("pro");
    assertThat(JsonPath.<Boolean>read(shown.body(), "$.assigned")).isTrue();
    List<Integer> limits = JsonPath.read(shown.body(), "$.limits[?(@.name=='routed')].rpmLimit");
    assertThat(limits).containsExactly(20);
    List<Integer> used = JsonPath.read(shown.body(), "$.budgets[?(@.budget=='routed')].windowUsed");
    assertThat(used).as("nothing spent was reset").containsExactly(3);

    HttpResponse<String> cleared = post("{\"plan\":null}");
    assertThat(cleared.statusCode()).isEqualTo(200);
    assertThat(JsonPath.<String>read(cleared.body(), "$.plan")).isEqualTo("free");
    assertThat(call().statusCode()).isEqualTo(429);
    assertThat(JsonPath.<String>read(get().body(), "$.plan")).isEqualTo("free");
    // the decisions counter is tagged with the plan, never the key
    assertThat(meters.get("ratelimiter.decisions").tags("policy", "routed", "plan", "pro",
        "result", "allowed").counter().count()).isEqualTo(1);
    assertThat(meters.get("ratelimiter.decisions").tags("plan", "free", "result", "denied")
        .counter().count()).isEqualTo(2);
    for (Meter m : meters.getMeters()) {
      m.getId().getTags().forEach(t -> assertThat(t.getValue()).doesNotContain(KEY));
    }
  }

  @Test
  void anUnknownPlanIsA400NamingItAndAssignsNothing() throws Exception {
    HttpResponse<String> unknown = post("{\"plan\":\"gold\"}");
    assertThat(unknown.statusCode()).isEqualTo(400);
    assertThat(unknown.body()).contains("'gold'").contains("[free, pro]").doesNotContain(KEY);
    assertThat(post("{\"plan\":\"\"}").statusCode()).isEqualTo(400);
    assertThat(post("{\"plan\":").statusCode()).isBetween(400, 499);
    assertThat(post("[1,2]").statusCode()).isBetween(400, 499);
  }
}
