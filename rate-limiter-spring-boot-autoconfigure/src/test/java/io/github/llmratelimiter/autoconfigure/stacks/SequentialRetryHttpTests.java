package io.github.llmratelimiter.autoconfigure.stacks;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.tokens.TokenGateway;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The retry advice over real HTTP (Tomcat) with {@code ratelimiter.composition=sequential}, the
 * core's order, which docs/core.md documents: a burst deny keeps its window slot, so the advised
 * wait is not enough when that slot fills the window; a window deny and a model-token deny whose
 * window has room are cleared by their wait. (The starter's default, reserve-commit, is checked on
 * both stacks by {@link AbstractWebStackScenarioTests}.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SequentialRetryHttpTests {

  private ConfigurableApplicationContext app;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  @BeforeAll
  void start() {
    app = AbstractWebStackScenarioTests.start(WebApplicationType.SERVLET, "ratelimiter.composition=sequential");
  }

  @AfterAll
  void stop() {
    app.close();
  }

  private HttpResponse<String> send(String path, String key, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(
            URI.create("http://localhost:" + AbstractWebStackScenarioTests.port(app) + path))
        .header("X-API-Key", key).timeout(Duration.ofSeconds(30));
    b = body == null ? b.GET() : b.header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private long waitAdvised(HttpResponse<String> denied) {
    assertThat(denied.statusCode()).as(denied.body()).isEqualTo(429);
    long ms = Long.parseLong(denied.headers().firstValue("retry-after-ms").orElseThrow());
    app.getBean(ManualTicker.class).advance(Duration.ofMillis(ms));
    return ms;
  }

  @Test
  void aBurstDenyKeepsItsWindowSlotSoItsAdvisedWaitIsNotEnough() throws Exception {
    String key = "sk-sequential-burst-0123456789";
    for (int i = 0; i < 4; i++) {
      assertThat(send("/v1/retry", key, null).statusCode()).isEqualTo(200);
    }
    HttpResponse<String> burst = send("/v1/retry", key, null);
    assertThat(burst.body()).contains("\"reason\":\"BURST_LIMIT\"");
    assertThat(waitAdvised(burst)).isEqualTo(10_000);
    HttpResponse<String> retry = send("/v1/retry", key, null);
    assertThat(retry.statusCode()).isEqualTo(429);
    assertThat(retry.body()).contains("\"reason\":\"RPM_LIMIT\""); // the burst deny's kept slot
    assertThat(waitAdvised(retry)).isEqualTo(50_000);
    assertThat(send("/v1/retry", key, null).statusCode()).isEqualTo(200);
  }

  @Test
  void aModelTokenDenyWhoseWindowHasRoomIsClearedByItsWait() throws Exception {
    String key = "sk-sequential-tpm-0123456789";
    for (int i = 0; i < 5; i++) {
      assertThat(send("/llm/chat?usage=20", key, TokenGateway.BODY_OF_20).statusCode()).isEqualTo(200);
    }
    HttpResponse<String> tpm = send("/llm/chat?usage=20", key, TokenGateway.BODY_OF_20);
    assertThat(tpm.body()).contains("\"reason\":\"TPM_LIMIT\"");
    assertThat(waitAdvised(tpm)).isEqualTo(60_000);
    assertThat(send("/llm/chat?usage=20", key, TokenGateway.BODY_OF_20).statusCode()).isEqualTo(200);
  }
}
