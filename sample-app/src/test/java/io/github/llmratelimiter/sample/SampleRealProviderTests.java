package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The sample in front of a real provider ({@code gateway.provider.base-url}, here a JDK HTTP
 * server answering like OpenAI): the gateway forwards the call, answers with the provider's
 * reply and usage, and learns from its headers: after {@code x-ratelimit-remaining-requests: 0}
 * it refuses the next call itself ({@code UPSTREAM_LIMIT}) without sending it.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"gateway.provider.api-key=sk-provider-account-key",
        "ratelimiter.upstreams.stand-in.rpm=10", "ratelimiter.upstreams.stand-in.models[0]=gpt-4o*"})
class SampleRealProviderTests {

  private static final LocalProvider PROVIDER = LocalProvider.answering(200, Map.of(
          "x-ratelimit-limit-requests", "10", "x-ratelimit-remaining-requests", "0",
          "x-ratelimit-reset-requests", "30s"),
      "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
          + "\"message\":{\"role\":\"assistant\",\"content\":\"from the provider\"},"
          + "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,"
          + "\"total_tokens\":10}}");

  @LocalServerPort
  int port;

  @Autowired
  ChatModel model;

  private final HttpClient http = HttpClient.newHttpClient();

  @DynamicPropertySource
  static void providerUrl(DynamicPropertyRegistry registry) {
    PROVIDER.register(registry);
  }

  @AfterAll
  static void stop() {
    PROVIDER.stop();
  }

  private HttpResponse<String> chat(String key) throws Exception {
    return SampleChat.hi(http, port, key);
  }

  @Test
  void theProvidersReplyIsServedAndItsHeadersCloseTheUpstream() throws Exception {
    assertThat(model).isInstanceOf(OpenAiChatModel.class);
    assertThat(model.toString()).doesNotContain("sk-provider-account-key");

    HttpResponse<String> first = chat("sk-real-provider-tenant-1");
    assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
    assertThat(first.body()).contains("from the provider").contains("\"total_tokens\":10");

    HttpResponse<String> second = chat("sk-real-provider-tenant-2");
    assertThat(second.statusCode()).as(second.body()).isEqualTo(429);
    assertThat(second.body()).contains("UPSTREAM_LIMIT");
    assertThat(PROVIDER.received()).as("the refused call never reached the provider").isEqualTo(1);
  }
}
