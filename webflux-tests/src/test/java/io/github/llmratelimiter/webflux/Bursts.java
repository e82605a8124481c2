package io.github.llmratelimiter.webflux;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Sends bursts of concurrent chat calls of one API key, from a client of its own. */
final class Bursts {

  private static final HttpClient HTTP = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(10)).build();

  private Bursts() {}

  /** What one call got: its status and how long it took. */
  record Answer(int status, long millis) {}

  /** Sends {@code count} concurrent calls of one key to {@code /v1/chat/completions} of each port in turn. */
  static List<Answer> burst(List<Integer> ports, String apiKey, int count) {
    List<CompletableFuture<Answer>> calls = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      HttpRequest request = HttpRequest.newBuilder(URI.create(
              "http://127.0.0.1:" + ports.get(i % ports.size()) + "/v1/chat/completions"))
          .header("Authorization", "Bearer " + apiKey)
          .header("Content-Type", "application/json")
          .timeout(Duration.ofSeconds(30))
          .POST(HttpRequest.BodyPublishers.ofString(
              "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
          .build();
      long start = System.nanoTime();
      calls.add(HTTP.sendAsync(request, HttpResponse.BodyHandlers.discarding())
          .thenApply(r -> new Answer(r.statusCode(),
              TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))));
    }
    return calls.stream().map(c -> c.orTimeout(60, TimeUnit.SECONDS).join()).toList();
  }

  /** The statuses of a burst on one port. */
  static List<Integer> statuses(int port, String apiKey, int count) {
    return burst(List.of(port), apiKey, count).stream().map(Answer::status).toList();
  }

  static long count(List<Answer> answers, int status) {
    return answers.stream().filter(a -> a.status() == status).count();
  }
}
