package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The stand-in provider's own limit over HTTP: three tenants, each well within its own budgets,
 * share a provider account of 2 requests a minute; the third call is the provider's 429.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"gateway.stand-in.requests-per-minute=2", "gateway.stand-in.tokens-per-minute=0"})
class StandInProviderHttpTests {

  @LocalServerPort
  int port;

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> chat(String key) throws Exception {
    return SampleChat.hi(http, port, key);
  }

  @Test
  void theProvidersOwnLimitAnswersA429WithItsRetryAfter() throws Exception {
    assertThat(chat("sk-provider-tenant-0000001").statusCode()).isEqualTo(200);
    assertThat(chat("sk-provider-tenant-0000002").statusCode()).isEqualTo(200);
    HttpResponse<String> refused = chat("sk-provider-tenant-0000003");
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    long retry = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
    assertThat(retry).isBetween(1L, 60L);
    assertThat((String) JsonPath.read(refused.body(), "$.error.code")).isEqualTo("rate_limit_exceeded");
    assertThat(refused.headers().allValues("x-ratelimit-limit-requests"))
        .as("the provider's own figures are the operator's, not passed to the tenant")
        .doesNotContain("2");
  }
}
