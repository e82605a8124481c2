package io.github.llmratelimiter.benchmarks.http;

import io.github.llmratelimiter.benchmarks.load.ClosedLoopLoad;
import io.github.llmratelimiter.benchmarks.report.LoadFigure;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The sample gateway under load with the limiter off, then on: each in a fresh gateway JVM on
 * loopback, {@value #CONCURRENCY} closed-loop clients (the JDK's {@link HttpClient}, HTTP/1.1,
 * kept-alive connections) sending {@code POST /v1/chat/completions}, each with its own API key.
 *
 * <p>Every answer must be a 200 with a body; with the limiter on it must carry the {@code
 * RateLimit} header (the limiter decided) and with it off it must not. The limits of the run with
 * the limiter on keep the sample's policies (a per-key level above a per key-and-model level with
 * a bucket) but high enough that nothing is denied.
 */
public final class HttpRun {

  /** The concurrent clients. */
  public static final int CONCURRENCY = 16;

  /** The gateway's JVM arguments: a fixed heap, as the JMH forks have. */
  public static final List<String> GATEWAY_JVM_ARGS = List.of("-Xms1g", "-Xmx1g");

  /** Application arguments of the run with the limiter off. */
  static final List<String> LIMITER_OFF = List.of("--ratelimiter.enabled=false");

  /** Application arguments of the run with the limiter on: the sample's policies, never denying. */
  static final List<String> LIMITER_ON = List.of(
      "--ratelimiter.enabled=true",
      "--ratelimiter.rpm.limit=1000000000",
      "--ratelimiter.policies.per-key.rpm.limit=1000000000",
      "--ratelimiter.policies.chat.rpm.limit=1000000000",
      "--ratelimiter.policies.chat.burst.capacity=1000000000",
      "--ratelimiter.policies.chat.burst.refill-per-second=1000000",
      "--ratelimiter.policies.chat.models.gpt-4o.rpm.limit=1000000000",
      "--ratelimiter.policies.chat.tpm.limit=1000000000000",
      "--ratelimiter.policies.models.rpm.limit=1000000000");

  private static final String MODEL = "gpt-4o-mini";
  private static final String BODY = "{\"model\":\"" + MODEL + "\",\"messages\":"
      + "[{\"role\":\"user\",\"content\":\"Say hello to the benchmark.\"}]}";

  private HttpRun() {}

  /**
   * Runs the gateway with the limiter off, then on.
   *
   * @param jar the sample app's executable jar
   * @param warmup each run's warm-up
   * @param measure each run's measured period
   * @return the figures, off first
   * @throws IllegalStateException if an answer is wrong
   */
  public static List<LoadFigure> run(Path jar, Duration warmup, Duration measure)
      throws IOException, InterruptedException {
    List<LoadFigure> figures = new ArrayList<>();
    figures.add(run(jar, warmup, measure, false));
    figures.add(run(jar, warmup, measure, true));
    return figures;
  }

  private static LoadFigure run(Path jar, Duration warmup, Duration measure, boolean limiter)
      throws IOException, InterruptedException {
    try (SampleApp app = SampleApp.start(jar, limiter ? LIMITER_ON : LIMITER_OFF)) {
      HttpClient http = HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
      HttpRequest[] requests = new HttpRequest[CONCURRENCY];
      for (int w = 0; w < CONCURRENCY; w++) {
        requests[w] = HttpRequest.newBuilder(URI.create(app.base() + "/v1/chat/completions"))
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer sk-bench-" + w)
            .POST(HttpRequest.BodyPublishers.ofString(BODY))
            .build();
      }
      ClosedLoopLoad.Result r;
      try {
        r = ClosedLoopLoad.run(CONCURRENCY, warmup, measure, worker -> check(
            http.send(requests[worker], HttpResponse.BodyHandlers.ofByteArray()), limiter),
            () -> {}, () -> {});
      } catch (IllegalStateException e) {
        throw new IllegalStateException(e.getMessage() + "; gateway log: " + app.tail(), e);
      }
      return new LoadFigure(limiter ? LoadFigure.HTTP_ON : LoadFigure.HTTP_OFF,
          "POST /v1/chat/completions, " + CONCURRENCY + " clients, " + CONCURRENCY + " API keys",
          r.concurrency(), r.seconds(), r.calls(), r.callsPerSecond(),
          r.latencies().percentile(50) / 1e6, r.latencies().percentile(99) / 1e6, Double.NaN,
          Double.NaN);
    }
  }

  static void check(HttpResponse<byte[]> response, boolean limiter) {
    if (response.statusCode() != 200 || response.body().length == 0) {
      throw new IllegalStateException("the gateway answered " + response.statusCode() + ": "
          + new String(response.body(), java.nio.charset.StandardCharsets.UTF_8));
    }
    if (response.headers().firstValue("RateLimit").isPresent() != limiter) {
      throw new IllegalStateException("the limiter was " + (limiter ? "on" : "off")
          + " but the RateLimit header was " + (limiter ? "missing" : "present"));
    }
  }
}
