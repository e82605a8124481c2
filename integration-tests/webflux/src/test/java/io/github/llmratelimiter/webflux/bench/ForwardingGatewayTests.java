package io.github.llmratelimiter.webflux.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The forwarding gateway of the benchmarks ({@link ForwardingGateway}) in front of a provider stub
 * (a JDK {@link HttpServer}), under this module's BlockHound: the provider gets its own API key,
 * never the tenant's; the caller gets the provider's status, body and rate-limit headers and none
 * of its other headers; the provider's 429 with {@code retry-after} reaches the caller as it is and
 * closes the upstream, so that the next call is the limiter's own 429 and never reaches the
 * provider.
 */
class ForwardingGatewayTests {

  private static final String PROVIDER_KEY = "sk-provider-account-under-test";
  private static final String TENANT_KEY = "sk-forwarding-tenant-000001";
  private static final String BODY = "{\"model\":\"gpt-4o-mini\",\"max_tokens\":16,"
      + "\"messages\":[{\"role\":\"user\",\"content\":\"forwarded\"}]}";

  private final Queue<String> authorizations = new ConcurrentLinkedQueue<>();
  private final HttpClient http = HttpClient.newHttpClient();
  private volatile int providerStatus = 200;
  private HttpServer provider;
  private ConfigurableApplicationContext gateway;

  @BeforeEach
  void start() throws IOException {
    provider = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
    provider.createContext("/v1/chat/completions", exchange -> {
      try (exchange) {
        authorizations.add(exchange.getRequestHeaders().getFirst("Authorization"));
        exchange.getRequestBody().readAllBytes();
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.getResponseHeaders().add("x-ratelimit-remaining-requests", "59");
        exchange.getResponseHeaders().add("x-provider-internal", "not for the caller");
        String body;
        if (providerStatus == 429) {
          exchange.getResponseHeaders().add("retry-after", "20");
          exchange.getResponseHeaders().add("retry-after-ms", "20000");
          body = "{\"error\":{\"message\":\"provider stub limit\",\"code\":\"rate_limit_exceeded\"}}";
        } else {
          body = "{\"id\":\"chatcmpl-stub\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
              + "\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":\"stop\"}],"
              + "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"total_tokens\":10}}";
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(providerStatus, bytes.length);
        exchange.getResponseBody().write(bytes);
      }
    });
    provider.start();
    gateway = ForwardingGateway.application().run("--server.port=0",
        "--spring.main.banner-mode=off",
        "--management.health.redis.enabled=false",
        "--bench.provider.base-url=http://127.0.0.1:" + provider.getAddress().getPort(),
        "--bench.provider.api-key=" + PROVIDER_KEY,
        "--ratelimiter.upstreams.stand-in.rpm=1000",
        "--ratelimiter.upstreams.stand-in.models=gpt-4o*",
        "--ratelimiter.policies.chat.rpm.limit=1000");
  }

  @AfterEach
  void stop() {
    gateway.close();
    provider.stop(0);
  }

  @Test
  void theProviderGetsItsOwnKeyAndTheCallerItsAnswerWithItsRateLimitHeaders() throws Exception {
    HttpResponse<String> answer = chat();

    assertThat(answer.statusCode()).isEqualTo(200);
    assertThat(answer.body()).contains("chatcmpl-stub").contains("\"total_tokens\":10");
    assertThat(answer.headers().firstValue("x-ratelimit-remaining-requests")).hasValue("59");
    assertThat(answer.headers().firstValue("x-provider-internal")).isEmpty();
    assertThat(authorizations).containsExactly("Bearer " + PROVIDER_KEY);
  }

  @Test
  void theProviders429ReachesTheCallerAndClosesTheUpstream() throws Exception {
    providerStatus = 429;
    HttpResponse<String> refused = chat();
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.body()).contains("provider stub limit");
    assertThat(refused.headers().firstValue("retry-after")).hasValue("20");
    assertThat(refused.headers().firstValue("retry-after-ms")).hasValue("20000");

    RateLimitStore store = gateway.getBean(RateLimitStore.class);
    Upstream standIn = gateway.getBean(UpstreamRoutes.class).upstream("stand-in").orElseThrow();
    Awaitility.await("the report, which follows the response").atMost(Duration.ofSeconds(5))
        .pollInterval(Duration.ofMillis(5))
        .until(() -> store.upstreamStatus(standIn).closedForMs() > 0);
    HttpResponse<String> denied = chat();
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(denied.body()).doesNotContain("provider stub limit");
    assertThat(authorizations).hasSize(1);
  }

  private HttpResponse<String> chat() throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + gateway.getEnvironment().getProperty("local.server.port") + "/v1/chat/completions"))
            .timeout(Duration.ofSeconds(20))
            .header("Authorization", "Bearer " + TENANT_KEY)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(BODY)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
