package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The sample's upstream learns from the stand-in provider's rate-limit headers on a successful
 * answer: once the provider said {@code x-ratelimit-remaining-requests: 0} (with its reset), the
 * gateway refuses the next call itself ({@code UPSTREAM_LIMIT}) instead of sending it to the
 * provider for a 429.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"gateway.stand-in.requests-per-minute=2", "gateway.stand-in.tokens-per-minute=0",
        "ratelimiter.upstreams.stand-in.rpm=10", "ratelimiter.upstreams.stand-in.models[0]=gpt-4o*"})
class SampleUpstreamLearnsProviderHeadersTests {

  @LocalServerPort
  int port;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> chat(String key) throws Exception {
    return SampleChat.hi(http, port, key);
  }

  @Test
  void aProviderThatSaidNothingRemainsGetsNoFurtherCallBeforeItsReset() throws Exception {
    assertThat(chat("sk-upstream-learn-0000001").statusCode()).isEqualTo(200);
    HttpResponse<String> second = chat("sk-upstream-learn-0000002");
    assertThat(second.statusCode()).isEqualTo(200); // the provider answered remaining-requests: 0
    HttpResponse<String> third = chat("sk-upstream-learn-0000003");
    assertThat(third.statusCode()).isEqualTo(429);
    assertThat(third.body())
        .as("the gateway refuses the call itself, not the provider (no provider 429)")
        .contains("\"reason\":\"UPSTREAM_LIMIT\"");
    assertThat((String) JsonPath.read(third.body(), "$.type"))
        .isEqualTo("urn:llmratelimiter:problem:upstream-capacity");
  }
}
