package io.github.llmratelimiter.gateway.scg;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A benchmark gateway of Spring Cloud Gateway in front of an {@link OpenAiUpstream}, as the
 * upstream fairness run starts it (the provider's base URL and key, an upstream {@code stand-in}
 * for the models {@code gpt-4o*}): the provider gets the gateway's own API key, never the
 * tenant's; the caller gets the provider's rate-limit headers (beside the limiter's own); the
 * provider's 429 with {@code retry-after} reaches the caller and closes the upstream, so that the
 * next call is the limiter's own 429 and never reaches the provider; the module's {@code
 * application.yml} (the tests' routes and limits) is not read. Each server's module runs it on its
 * gateway.
 */
public abstract class AbstractBenchGatewayTests {

  private static final String PROVIDER_KEY = "sk-provider-account-under-test";
  private static final String TENANT_KEY = "sk-bench-gateway-tenant-0001";

  private final OpenAiUpstream provider = OpenAiUpstream.start();
  private final HttpClient http = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1).build();
  private ConfigurableApplicationContext gateway;

  /**
   * Starts the gateway with these application arguments.
   *
   * @param args the arguments
   * @return the running gateway
   */
  protected abstract ConfigurableApplicationContext start(String... args);

  @BeforeEach
  void startGateway() {
    gateway = start("--server.port=0", "--spring.main.banner-mode=off",
        "--management.server.port=0",
        "--bench.provider.base-url=" + provider.uri(),
        "--bench.provider.api-key=" + PROVIDER_KEY,
        "--ratelimiter.upstreams.stand-in.rpm=1000",
        "--ratelimiter.upstreams.stand-in.models=gpt-4o*",
        "--ratelimiter.policies.chat.rpm.limit=1000");
  }

  @AfterEach
  void stop() {
    gateway.close();
    provider.close();
  }

  @Test
  void theProviderGetsTheGatewaysKeyAndTheCallerItsRateLimitHeaders() throws Exception {
    HttpResponse<String> answer = chat("bench-gateway-own-key",
        "x-ratelimit-remaining-requests=59");

    assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
    // the limiter writes a header of this name of its own too
    assertThat(answer.headers().allValues("x-ratelimit-remaining-requests")).contains("59");
    assertThat(provider.receivedContaining("bench-gateway-own-key")).singleElement()
        .extracting(OpenAiUpstream.Received::authorization).isEqualTo("Bearer " + PROVIDER_KEY);
    assertThat(provider.receivedFor(TENANT_KEY)).isEmpty();
    assertThat(gateway.getEnvironment().getProperty("ratelimiter.policies.chat.scope"))
        .as("a property of the module's application.yml").isNull();
  }

  @Test
  void theProviders429ReachesTheCallerAndClosesTheUpstream() throws Exception {
    HttpResponse<String> refused = chat("bench-gateway-refused", "retry-after=20");
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("retry-after")).hasValue("20");

    RateLimitStore store = gateway.getBean(RateLimitStore.class);
    Upstream standIn = gateway.getBean(UpstreamRoutes.class).upstream("stand-in").orElseThrow();
    Awaitility.await("the report, which follows the response").atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(5))
        .until(() -> store.upstreamStatus(standIn).closedForMs() > 0);
    HttpResponse<String> denied = chat("bench-gateway-denied", null);
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(provider.receivedContaining("bench-gateway-denied")).isEmpty();
  }

  /** A chat call with a marker in its prompt; with stub headers, a 429 if they set retry-after. */
  private HttpResponse<String> chat(String marker, String stubHeaders) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
            + gateway.getEnvironment().getProperty("local.server.port") + "/v1/chat/completions"))
        .timeout(Duration.ofSeconds(20))
        .header("Authorization", "Bearer " + TENANT_KEY)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"gpt-4o-mini\",\"max_tokens\":16,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"" + marker + "\"}]}"));
    if (stubHeaders != null) {
      request.header("X-Stub-Headers", stubHeaders);
      if (stubHeaders.startsWith("retry-after")) {
        request.header("X-Stub-Status", "429");
      }
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
