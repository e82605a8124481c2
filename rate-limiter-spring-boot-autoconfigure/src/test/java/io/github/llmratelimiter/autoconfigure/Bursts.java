package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.redis.RedisServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.LongSummaryStatistics;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Sends bursts of concurrent chat calls of one API key ({@code POST /v1/chat/completions}, model
 * {@value #MODEL}) to running gateways, from a client of its own, on either web stack.
 */
public final class Bursts {

  /** The model every call names. */
  public static final String MODEL = "gpt-4o";

  private static final HttpClient HTTP = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(10)).build();

  private Bursts() {}

  /**
   * What one call got.
   *
   * @param status its status
   * @param millis how long it took, from sending to the response
   * @param body the response body when the status is neither 200 nor 429 (what went wrong), else
   *     empty
   */
  public record Answer(int status, long millis, String body) {}

  /**
   * Sends {@code count} concurrent calls of one key, spread over the ports in turn, and returns
   * each answer.
   *
   * @param ports the gateways' ports on the loopback interface
   * @param apiKey the key, sent as a Bearer token
   * @param count how many calls
   * @return the answers, in the order sent
   */
  public static List<Answer> burst(List<Integer> ports, String apiKey, int count) {
    List<CompletableFuture<Answer>> calls = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      HttpRequest request = HttpRequest.newBuilder(URI.create(
              "http://127.0.0.1:" + ports.get(i % ports.size()) + "/v1/chat/completions"))
          .header("Authorization", "Bearer " + apiKey)
          .header("Content-Type", "application/json")
          .timeout(Duration.ofSeconds(30))
          .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + MODEL
              + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
          .build();
      long start = System.nanoTime();
      calls.add(HTTP.sendAsync(request, HttpResponse.BodyHandlers.ofString())
          .thenApply(r -> new Answer(r.statusCode(),
              TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start),
              r.statusCode() == 200 || r.statusCode() == 429 ? "" : r.body())));
    }
    return calls.stream().map(c -> c.orTimeout(60, TimeUnit.SECONDS).join()).toList();
  }

  /**
   * Returns the statuses of a burst on one port.
   *
   * @param port the gateway's port
   * @param apiKey the key
   * @param count how many calls
   * @return the statuses, in the order sent
   */
  public static List<Integer> statuses(int port, String apiKey, int count) {
    return burst(List.of(port), apiKey, count).stream().map(Answer::status).toList();
  }

  /**
   * Returns how many answers have a status.
   *
   * @param answers the answers
   * @param status the status
   * @return how many
   */
  public static long count(List<Answer> answers, int status) {
    return answers.stream().filter(a -> a.status() == status).count();
  }

  /**
   * Returns how many answers have each status, by status.
   *
   * @param answers the answers
   * @return the count of each status, in the order of the statuses
   */
  public static java.util.SortedMap<Integer, Long> histogram(List<Answer> answers) {
    return answers.stream().collect(java.util.stream.Collectors.groupingBy(Answer::status,
        java.util.TreeMap::new, java.util.stream.Collectors.counting()));
  }

  /**
   * Returns the answers whose status is neither 200 nor 429, each as its status and body.
   *
   * @param answers the answers
   * @return the unexpected answers, in the order sent
   */
  public static List<String> unexpected(List<Answer> answers) {
    return answers.stream().filter(a -> a.status() != 200 && a.status() != 429)
        .map(a -> a.status() + " " + a.body()).toList();
  }

  /**
   * Prints what a burst got (its statuses, its mean and longest latency) under a label, and returns
   * the longest latency.
   *
   * @param label what the burst was, for the log
   * @param answers the answers
   * @return the longest latency, in milliseconds
   */
  public static long report(String label, List<Answer> answers) {
    LongSummaryStatistics millis = answers.stream().mapToLong(Answer::millis).summaryStatistics();
    System.out.println(label + ": " + answers.stream().map(Answer::status).distinct().toList()
        + " latency ms avg=" + Math.round(millis.getAverage()) + " max=" + millis.getMax());
    return millis.getMax();
  }

  /**
   * Sends a burst while Redis is frozen (SIGSTOP: it keeps its connections and answers nothing),
   * and thaws it however the burst ends.
   *
   * @param server the redis-server to freeze
   * @param burst sends the burst and returns its answers
   * @return the answers
   */
  public static List<Answer> whileFrozen(RedisServer server, Supplier<List<Answer>> burst) {
    server.freeze();
    try {
      return burst.get();
    } finally {
      server.thaw();
    }
  }
}
