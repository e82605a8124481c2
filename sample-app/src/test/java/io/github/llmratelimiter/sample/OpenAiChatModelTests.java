package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** The provider client against a JDK HTTP server playing an OpenAI-compatible provider. */
class OpenAiChatModelTests {

  private static final JsonMapper JSON = JsonMapper.builder().build();

  private HttpServer server;
  private volatile int status;
  private volatile String answer;
  private volatile Map<String, String> answerHeaders = Map.of();
  /** While set, the provider holds its answer until the test ends (a provider that hangs). */
  private volatile boolean hangs;
  private final CountDownLatch ended = new CountDownLatch(1);
  private final List<String> bodies = new CopyOnWriteArrayList<>();
  private final List<String> authorizations = new CopyOnWriteArrayList<>();
  private final List<String> paths = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      try (exchange) {
        paths.add(exchange.getRequestURI().getPath());
        authorizations.add(String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
        bodies.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        if (hangs) {
          try {
            ended.await(30, TimeUnit.SECONDS); // the client's timeout must cut the call first
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        answerHeaders.forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        byte[] body = answer.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, body.length);
        exchange.getResponseBody().write(body);
      } catch (IOException e) {
        // the client went away (its timeout)
      }
    });
    server.start();
  }

  @AfterEach
  void stop() {
    ended.countDown();
    server.stop(0);
  }

  private OpenAiChatModel model(String key, Duration timeout) {
    return new OpenAiChatModel(new GatewayProperties.Provider(
        URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/"), key, timeout), JSON);
  }

  private static ChatCompletionRequest request() {
    return new ChatCompletionRequest("gpt-4o-mini",
        List.of(new ChatCompletionRequest.Message("user", "say hi")), true, 90, null, null);
  }

  @Test
  void aReplyCarriesTheProvidersUsageAndRateLimitHeaders() throws Exception {
    status = 200;
    answer = "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
        + "\"message\":{\"role\":\"assistant\",\"content\":\"hi there\"},\"finish_reason\":\"length\"}],"
        + "\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":90,\"total_tokens\":101}}";
    answerHeaders = Map.of("x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "59",
        "x-ratelimit-reset-requests", "1s", "x-ratelimit-limit-tokens", "6000",
        "x-ratelimit-remaining-tokens", "5899", "x-ratelimit-reset-tokens", "1.01s",
        "x-request-id", "req-1");

    ChatModel.Reply reply = model("sk-provider-secret", Duration.ofSeconds(5)).complete(request());

    assertThat(reply.content()).isEqualTo("hi there");
    assertThat(reply.promptTokens()).isEqualTo(11);
    assertThat(reply.completionTokens()).isEqualTo(90);
    assertThat(reply.finishReason()).isEqualTo("length");
    assertThat(reply.providerHeaders()).containsOnly(
        Map.entry("x-ratelimit-limit-requests", "60"), Map.entry("x-ratelimit-remaining-requests", "59"),
        Map.entry("x-ratelimit-reset-requests", "1s"), Map.entry("x-ratelimit-limit-tokens", "6000"),
        Map.entry("x-ratelimit-remaining-tokens", "5899"), Map.entry("x-ratelimit-reset-tokens", "1.01s"));
    assertThat(paths).containsExactly("/v1/chat/completions");
    assertThat(authorizations).containsExactly("Bearer sk-provider-secret");
    var sent = JSON.readTree(bodies.get(0));
    assertThat(sent.path("model").asString()).isEqualTo("gpt-4o-mini");
    assertThat(sent.path("stream").asBoolean(true)).as("never streamed to the provider").isFalse();
    assertThat(sent.path("max_tokens").asInt()).isEqualTo(90);
    assertThat(sent.path("messages").path(0).path("content").asString()).isEqualTo("say hi");
  }

  @Test
  void a429IsTheProvidersRateLimitWithItsRetryHeaders() {
    status = 429;
    answer = "{\"error\":{\"message\":\"Rate limit reached for requests\",\"type\":\"requests\","
        + "\"code\":\"rate_limit_exceeded\"}}";
    answerHeaders = Map.of("retry-after", "3", "retry-after-ms", "2500",
        "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "2.5s");

    assertThatThrownBy(() -> model(null, Duration.ofSeconds(5)).complete(request()))
        .isInstanceOfSatisfying(ProviderRateLimitException.class, e -> {
          assertThat(e.limit()).isEqualTo("requests");
          assertThat(e.headers()).containsEntry("retry-after", "3")
              .containsEntry("retry-after-ms", "2500")
              .containsEntry("x-ratelimit-reset-requests", "2.5s");
        });
    assertThat(authorizations).as("no key set, none sent").containsExactly("null");
  }

  @Test
  void garbageAnOtherStatusOrASlowProviderAreUpstreamFailuresThatNameNoKey() {
    status = 200;
    answer = "<html>not json</html>";
    assertThatThrownBy(() -> model("sk-provider-secret", Duration.ofSeconds(5)).complete(request()))
        .isInstanceOf(UpstreamFailureException.class).hasMessageContaining("not JSON")
        .hasMessageNotContaining("sk-provider-secret");

    answer = "{\"choices\":[]}";
    assertThatThrownBy(() -> model("sk-provider-secret", Duration.ofSeconds(5)).complete(request()))
        .isInstanceOf(UpstreamFailureException.class).hasMessageContaining("usage");

    status = 503;
    answer = "{\"error\":{\"message\":\"overloaded\"}}";
    assertThatThrownBy(() -> model("sk-provider-secret", Duration.ofSeconds(5)).complete(request()))
        .isInstanceOf(UpstreamFailureException.class).hasMessageContaining("answered 503");

    status = 200;
    hangs = true;
    assertThatThrownBy(() -> model("sk-provider-secret", Duration.ofMillis(300)).complete(request()))
        .isInstanceOf(UpstreamFailureException.class).hasMessageContaining("did not answer within PT0.3S")
        .hasMessageNotContaining("sk-provider-secret");
  }

  @Test
  void settingsAreValidatedAndTheKeyIsNeverShown() {
    GatewayProperties.Provider p = new GatewayProperties.Provider(
        URI.create("https://api.example.com"), "sk-provider-secret", Duration.ofSeconds(5));
    assertThat(p.toString()).doesNotContain("sk-provider-secret").contains("******");
    assertThat(new OpenAiChatModel(p, JSON).toString()).doesNotContain("sk-provider-secret");
    assertThatThrownBy(() -> new GatewayProperties.Provider(URI.create("ftp://x"), null,
        Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("gateway.provider.base-url").hasMessageContaining("ftp://x");
    assertThatThrownBy(() -> new GatewayProperties.Provider(
        URI.create("ftp://user:sk-in-the-url@x"), null, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("gateway.provider.base-url").hasMessageNotContaining("sk-in-the-url");
    assertThatThrownBy(() -> new GatewayProperties.Provider(null, null, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gateway.provider.timeout");
  }
}
