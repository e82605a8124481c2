package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The sample in front of a provider that refuses a call with a 429 naming a lower limit than the
 * upstream's: the gateway learns all that the 429 says (its lower limit, its counts, its retry),
 * not only the {@code Retry-After} it passes on to the client, and holds the lower limit.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"gateway.provider.api-key=sk-provider-account-key",
        "ratelimiter.upstreams.stand-in.rpm=10", "ratelimiter.upstreams.stand-in.tpm=10000",
        "ratelimiter.upstreams.stand-in.models[0]=gpt-4o*"})
class SampleProviderRefusalTests {

  /** A provider whose limits were lowered below the gateway's: every call gets its 429. */
  private static final LocalProvider PROVIDER = LocalProvider.answering(429, new LinkedHashMap<>(
      Map.of("x-ratelimit-limit-requests", "3", "x-ratelimit-remaining-requests", "0",
          "x-ratelimit-reset-requests", "40s", "x-ratelimit-limit-tokens", "2000",
          "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "40s",
          "retry-after", "2", "retry-after-ms", "1500")),
      "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\","
          + "\"code\":\"rate_limit_exceeded\"}}");

  @LocalServerPort
  int port;

  @Autowired
  RateLimitGateway gateway;

  @Autowired
  RateLimitStore store;

  private final HttpClient http = HttpClient.newHttpClient();

  @DynamicPropertySource
  static void providerUrl(DynamicPropertyRegistry registry) {
    PROVIDER.register(registry);
  }

  @AfterAll
  static void stop() {
    PROVIDER.stop();
  }

  @Test
  void aProvider429NamingLowerLimitsLowersTheUpstreamsLimits() throws Exception {
    HttpResponse<String> refused = SampleChat.hi(http, port, "sk-provider-refusal-tenant-1");
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
    assertThat(refused.body()).contains("model provider's capacity");
    assertThat(refused.headers().firstValue("x-ratelimit-limit-requests"))
        .as("the operator's account figures are not passed to the tenant (the gateway's own are)")
        .isNotEqualTo(java.util.Optional.of("3"));

    Upstream standIn = gateway.enforcer().upstreamRoutes().upstream("stand-in").orElseThrow();
    UpstreamStatus status = store.upstreamStatus(standIn);
    assertThat(status.requestsLimit()).as("the provider's lower limit of requests").isEqualTo(3);
    assertThat(status.modelTokensLimit()).as("its lower limit of tokens").isEqualTo(2000);
    assertThat(status.reportedRequestsRemaining()).isZero();
    assertThat(status.closedForMs()).as("closed until the counts' reset, not only the retry")
        .isGreaterThan(30_000);
  }
}
