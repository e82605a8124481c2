package io.github.llmratelimiter.autoconfigure.endpoint;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/**
 * By default the endpoint is read-only: the reset and the plan assignment are not available until
 * the user grants it.
 */
@SpringBootTest(classes = RateLimiterServerTests.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"management.endpoints.web.exposure.include=ratelimiter",
        "ratelimiter.web.routes[0].include=/v1/**", "ratelimiter.policies.routed.rpm.limit=3",
        "ratelimiter.policies.annotated.rpm.limit=2"})
@DirtiesContext
class RateLimiterEndpointReadOnlyTests {

  @LocalServerPort
  int port;

  @Test
  void resetIsUnavailableUnlessAccessIsGranted() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    URI base = URI.create("http://localhost:" + port + "/actuator/ratelimiter");
    http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/routed"))
        .header("X-API-Key", "sk-readonly-key-0000")
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(http.send(HttpRequest.newBuilder(base)
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString())
        .statusCode()).isEqualTo(200);
    int delete = http.send(HttpRequest.newBuilder(URI.create(base + "/sk-readonly-key-0000")).DELETE()
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode();
    assertThat(delete).isEqualTo(405);
    int assign = http.send(HttpRequest.newBuilder(URI.create(base + "/sk-readonly-key-0000"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"plan\":\"default\"}")).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode();
    assertThat(assign).as("an assignment is a write, like a reset").isEqualTo(405);
  }
}
