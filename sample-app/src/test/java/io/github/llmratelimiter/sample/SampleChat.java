package io.github.llmratelimiter.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A plain chat call of the tests: {@code gpt-4o-mini}, one user message "hi". */
final class SampleChat {

  private SampleChat() {}

  /**
   * Sends the call to the sample on {@code port} with the API key {@code key}.
   *
   * @return the response, its body as a string
   */
  static HttpResponse<String> hi(HttpClient http, int port, String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .header("Authorization", "Bearer " + key)
        .POST(HttpRequest.BodyPublishers.ofString(
            "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }
}
