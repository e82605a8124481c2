package io.github.llmratelimiter.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.RateLimitException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The official OpenAI Java SDK against the gateway on a random port: completions, the SDK's
 * rate-limit error carrying our headers, the SDK's own retry clearing a short deny, and streaming.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
    // a budget that refills within a second: one token, two tokens a second (a wait of <= 500 ms)
    "ratelimiter.policies.chat.models.gpt-4o-mini.burst.capacity=1",
    "ratelimiter.policies.chat.models.gpt-4o-mini.burst.refill-per-second=2",
    "ratelimiter.policies.chat.models.gpt-4o-mini.rpm.limit=1000",
    "ratelimiter.policies.per-key.rpm.limit=1000"})
class OpenAiSdkEndToEndTests {

  @LocalServerPort
  int port;

  @Autowired
  MeterRegistry meters;

  private OpenAIClient client(String apiKey, int maxRetries) {
    return OpenAIOkHttpClient.builder()
        .baseUrl("http://localhost:" + port + "/v1")
        .apiKey(apiKey)
        .maxRetries(maxRetries)
        .build();
  }

  private static ChatCompletionCreateParams params(String model, String text) {
    return ChatCompletionCreateParams.builder().model(model).addUserMessage(text).build();
  }

  @Test
  void sdkGetsCompletionsUntilTheLimitThenItsRateLimitErrorWithOurHeaders() {
    OpenAIClient client = client("sk-sdk-limit-0000000001", 0);
    for (int i = 0; i < 3; i++) {
      ChatCompletion completion = client.chat().completions().create(params("gpt-4o", "hello there"));
      assertThat(completion.choices().get(0).message().content()).hasValue("Echo from gpt-4o: hello there");
      assertThat(completion.usage().orElseThrow().promptTokens()).isEqualTo(2);
      assertThat(completion.usage().orElseThrow().completionTokens()).isEqualTo(5);
      assertThat(completion.usage().orElseThrow().totalTokens()).isEqualTo(7);
    }
    assertThatThrownBy(() -> client.chat().completions().create(params("gpt-4o", "one more")))
        .isInstanceOfSatisfying(RateLimitException.class, e -> {
          assertThat(e.statusCode()).isEqualTo(429);
          assertThat(e.code()).hasValue("rate_limit_exceeded");
          assertThat(e.headers().values("x-ratelimit-remaining-requests")).containsExactly("0");
          assertThat(e.headers().values("x-ratelimit-limit-requests")).containsExactly("3");
          assertThat(e.headers().values("RateLimit-Policy"))
              .containsExactly("\"per-key\";q=1000;w=60, \"chat/gpt-4o\";q=3;w=60, "
                  + "\"chat/gpt-4o-burst\";q=5;w=5, \"chat/gpt-4o-concurrency\";q=2;qu=\"concurrent-requests\", "
                  + "\"chat/gpt-4o-tokens\";q=500;qu=\"tokens\";w=60, \"per-key/daily-spend\";q=4000;qu=\"cost-micros\";w=86400");
          assertThat(e.headers().values("x-ratelimit-limit-tokens")).containsExactly("500");
          long retryMs = Long.parseLong(e.headers().values("retry-after-ms").get(0));
          long retrySeconds = Long.parseLong(e.headers().values("Retry-After").get(0));
          assertThat(retryMs).isBetween(1L, 60_000L);
          assertThat(retrySeconds).isBetween(1L, 60L).isEqualTo((retryMs + 999) / 1000);
        });
  }

  @Test
  void sdkOwnRetryReadsRetryAfterMsAndSucceeds() {
    OpenAIClient client = client("sk-sdk-retry-0000000002", 2);
    // Two calls back to back: the first empties the one-token bucket, so the second meets a 429
    // with retry-after-ms of at most 500 ms, which the SDK waits and retries on its own. Should the
    // machine be so slow that the bucket refilled between the two calls, the pair is repeated
    // (bounded): the test never sleeps itself.
    boolean retried = false;
    for (int attempt = 0; attempt < 5 && !retried; attempt++) {
      double deniedBefore = burstDenies();
      client.chat().completions().create(params("gpt-4o-mini", "first"));
      ChatCompletion second = client.chat().completions().create(params("gpt-4o-mini", "second"));
      assertThat(second.choices().get(0).message().content()).hasValue("Echo from gpt-4o-mini: second");
      retried = burstDenies() > deniedBefore;
    }
    assertThat(retried).as("the SDK met a 429 and succeeded on its own retry").isTrue();
  }

  @Test
  void streamingWorksThroughTheLimiter() {
    OpenAIClient client = client("sk-sdk-stream-000000003", 0);
    ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
        .model("gpt-4o").addUserMessage("stream me please")
        .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build())
        .build();
    StringBuilder text = new StringBuilder();
    long[] total = {0};
    try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(params)) {
      stream.stream().forEach(chunk -> {
        chunk.choices().forEach(c -> c.delta().content().ifPresent(text::append));
        chunk.usage().ifPresent(u -> total[0] = u.totalTokens());
      });
    }
    assertThat(text.toString()).isEqualTo("Echo from gpt-4o: stream me please");
    assertThat(total[0]).isEqualTo(3 + 6);
    // the stream was charged exactly once: two more fit the gpt-4o budget of 3, the next does not
    client.chat().completions().create(params("gpt-4o", "two"));
    client.chat().completions().create(params("gpt-4o", "three"));
    assertThatThrownBy(() -> client.chat().completions().create(params("gpt-4o", "four")))
        .isInstanceOf(RateLimitException.class);
  }

  private double burstDenies() {
    Counter c = meters.find("ratelimiter.decisions")
        .tags("policy", "chat", "result", "denied", "reason", "BURST_LIMIT").counter();
    return c == null ? 0 : c.count();
  }
}
