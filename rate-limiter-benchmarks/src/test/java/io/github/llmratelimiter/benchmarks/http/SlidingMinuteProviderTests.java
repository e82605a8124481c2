package io.github.llmratelimiter.benchmarks.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/** The run's stand-in provider: its limits, headers and 429s (no time passes in these tests). */
class SlidingMinuteProviderTests {

  private final HttpClient http = HttpClient.newHttpClient();

  private HttpResponse<String> call(SlidingMinuteProvider provider, int maxTokens) throws Exception {
    // 28 bytes of content: 7 + 4 + 3 = 14 prompt tokens, as the gateway estimates them
    return http.send(HttpRequest.newBuilder(URI.create(provider.base() + "/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"gpt-4o-mini\",\"max_tokens\":"
            + maxTokens + ",\"messages\":[{\"role\":\"user\",\"content\":\"fairness run prompt 28 bytes\"}]}"))
        .build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void theRequestLimitRefusesTheNextCallWithRetryHeaders() throws Exception {
    try (SlidingMinuteProvider provider = new SlidingMinuteProvider(3, 100_000, 0)) {
      for (int i = 1; i <= 3; i++) {
        HttpResponse<String> ok = call(provider, 136);
        assertEquals(200, ok.statusCode());
        assertTrue(ok.body().contains("\"total_tokens\":150"), ok.body());
        assertEquals(Long.toString(3 - i), ok.headers().firstValue("x-ratelimit-remaining-requests")
            .orElseThrow());
        assertEquals(Long.toString(100_000 - 150L * i),
            ok.headers().firstValue("x-ratelimit-remaining-tokens").orElseThrow());
      }
      HttpResponse<String> refused = call(provider, 136);
      assertEquals(429, refused.statusCode());
      long retryMs = Long.parseLong(refused.headers().firstValue("retry-after-ms").orElseThrow());
      assertTrue(retryMs > 0 && retryMs <= 60_000, "retry-after-ms " + retryMs);
      assertEquals((retryMs + 999) / 1000,
          Long.parseLong(refused.headers().firstValue("retry-after").orElseThrow()));
      assertEquals("0", refused.headers().firstValue("x-ratelimit-remaining-requests").orElseThrow());
      SlidingMinuteProvider.Counts counts = provider.counts();
      assertEquals(4, counts.received());
      assertEquals(1, counts.refused());
      assertEquals(3, counts.accepted().size());
    }
  }

  @Test
  void theTokenLimitRefusesACallThatDoesNotFit() throws Exception {
    try (SlidingMinuteProvider provider = new SlidingMinuteProvider(60, 6000, 0)) {
      assertEquals(200, call(provider, 5000 - 14).statusCode());
      assertEquals(200, call(provider, 986).statusCode()); // exactly 6,000 in the minute
      HttpResponse<String> refused = call(provider, 1);
      assertEquals(429, refused.statusCode());
      assertEquals("0", refused.headers().firstValue("x-ratelimit-remaining-tokens").orElseThrow());
      assertEquals("58", refused.headers().firstValue("x-ratelimit-remaining-requests").orElseThrow());
    }
  }

  @Test
  void resetsAreWrittenAsOpenAiWritesThem() {
    assertEquals("0s", SlidingMinuteProvider.duration(0));
    assertEquals("120ms", SlidingMinuteProvider.duration(120));
    assertEquals("1.5s", SlidingMinuteProvider.duration(1500));
    assertEquals("20s", SlidingMinuteProvider.duration(20_000));
    assertEquals("59.999s", SlidingMinuteProvider.duration(59_999));
    assertEquals("1m0s", SlidingMinuteProvider.duration(60_000));
  }
}
