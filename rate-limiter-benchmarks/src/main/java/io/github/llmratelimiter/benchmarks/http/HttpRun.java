package io.github.llmratelimiter.benchmarks.http;

import io.github.llmratelimiter.benchmarks.load.ClosedLoopLoad;
import io.github.llmratelimiter.benchmarks.load.Latencies;
import io.github.llmratelimiter.benchmarks.report.LoadFigure;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The sample gateway under load with the limiter off and on: each in a fresh gateway JVM on
 * loopback, both up for the whole run and loaded in turns ({@link #SLICES}), {@value #CONCURRENCY}
 * closed-loop clients (the JDK's {@link HttpClient}, HTTP/1.1,
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

  /**
   * Extra arguments of the servlet sample with the limiter on: its default plan sets the chat
   * level's own request limit and a daily spend, which the policies' limits above do not raise
   * (the quota is still checked, charged and settled on every call).
   */
  static final List<String> SAMPLE_PLAN_ON = List.of(
      "--ratelimiter.plans.free.policies.chat.rpm.limit=1000000000",
      "--ratelimiter.plans.free.policies.per-key.quotas.daily-spend.limit=1000000000");

  private static final String MODEL = "gpt-4o-mini";
  private static final String BODY = "{\"model\":\"" + MODEL + "\",\"messages\":"
      + "[{\"role\":\"user\",\"content\":\"Say hello to the benchmark.\"}]}";

  private HttpRun() {}

  /**
   * Measured slices per gateway. The measured period of each gateway is cut into this many slices,
   * run in the order off, on, on, off, off, on, on, off (both gateways stay up), so that a change
   * in the machine's other load while the run lasts falls on both alike.
   */
  static final int SLICES = 4;

  /**
   * Runs the sample gateway with the limiter off and on, each in a JVM of its own: a warm-up of
   * each, then their measured slices alternated.
   *
   * @param jar the sample app's executable jar
   * @param warmup each gateway's warm-up
   * @param measure each gateway's measured period, in {@value #SLICES} slices
   * @return the figures, off first
   * @throws IllegalStateException if an answer is wrong
   */
  public static List<LoadFigure> run(Path jar, Duration warmup, Duration measure)
      throws IOException, InterruptedException {
    return run("servlet", SampleApp.jar(jar), SAMPLE_PLAN_ON, LoadFigure.HTTP_OFF,
        LoadFigure.HTTP_ON, "", warmup, measure);
  }

  /**
   * Runs the reactive benchmark gateway of {@code integration-tests/webflux} (WebFlux on Netty, the sample's
   * policies) as {@link #run(Path, Duration, Duration)} runs the sample gateway.
   *
   * @param module the {@code integration-tests/webflux} module's directory, built with {@code package}
   * @param warmup each gateway's warm-up
   * @param measure each gateway's measured period, in {@value #SLICES} slices
   * @return the figures, off first
   * @throws IllegalStateException if an answer is wrong
   */
  public static List<LoadFigure> runReactive(Path module, Duration warmup, Duration measure)
      throws IOException, InterruptedException {
    return run("reactive", SampleApp.reactive(module), List.of(), LoadFigure.HTTP_REACTIVE_OFF,
        LoadFigure.HTTP_REACTIVE_ON, "WebFlux on Netty, ", warmup, measure);
  }

  private static List<LoadFigure> run(String name, List<String> launch, List<String> extraOn,
      String offSubject, String onSubject, String stack, Duration warmup, Duration measure)
      throws IOException, InterruptedException {
    List<String> on = new ArrayList<>(LIMITER_ON);
    on.addAll(extraOn);
    try (SampleApp offApp = SampleApp.start(name + "-off", launch, LIMITER_OFF);
        SampleApp onApp = SampleApp.start(name + "-on", launch, on)) {
      Gateway offGateway = new Gateway(offApp, false, offSubject, stack);
      Gateway onGateway = new Gateway(onApp, true, onSubject, stack);
      if (!warmup.isZero()) {
        offGateway.load(Duration.ZERO, warmup);
        onGateway.load(Duration.ZERO, warmup);
      }
      Duration slice = measure.dividedBy(SLICES);
      // a short re-warm before each slice: the clients' threads start again
      Duration rewarm = warmup.compareTo(Duration.ofSeconds(1)) < 0 ? warmup : Duration.ofSeconds(1);
      for (int i = 0; i < SLICES; i++) {
        Gateway first = i % 2 == 0 ? offGateway : onGateway;
        Gateway second = i % 2 == 0 ? onGateway : offGateway;
        first.measure(rewarm, slice);
        second.measure(rewarm, slice);
      }
      return List.of(offGateway.figure(), onGateway.figure());
    }
  }

  /** One gateway under load, with the measured slices so far. */
  private static final class Gateway {

    private final SampleApp app;
    private final boolean limiter;
    private final String subject;
    private final String stack;
    private final HttpRequest[] requests = new HttpRequest[CONCURRENCY];
    private final List<Latencies> latencies = new ArrayList<>();
    /** Requests sent again on a fresh connection after theirs was closed under them. */
    private final AtomicLong retried = new AtomicLong();
    private long calls;
    private double seconds;

    Gateway(SampleApp app, boolean limiter, String subject, String stack) {
      this.app = app;
      this.limiter = limiter;
      this.subject = subject;
      this.stack = stack;
      for (int w = 0; w < CONCURRENCY; w++) {
        requests[w] = HttpRequest.newBuilder(URI.create(app.base() + "/v1/chat/completions"))
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer sk-bench-" + w)
            .POST(HttpRequest.BodyPublishers.ofString(BODY))
            .build();
      }
    }

    /**
     * Loads the gateway through a new client: a kept-alive connection left idle while the other
     * gateway ran may have been closed by the server, and a POST on it would fail.
     */
    ClosedLoopLoad.Result load(Duration warmup, Duration measure) throws InterruptedException {
      HttpClient http = HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
      try {
        return ClosedLoopLoad.run(CONCURRENCY, warmup, measure, worker -> check(
            sendRetrying(http, requests[worker], retried), limiter),
            () -> {}, () -> {});
      } catch (IllegalStateException e) {
        throw new IllegalStateException(e.getMessage() + "; gateway log: " + app.tail(), e);
      }
    }

    void measure(Duration warmup, Duration slice) throws InterruptedException {
      ClosedLoopLoad.Result r = load(warmup, slice);
      calls += r.calls();
      seconds += r.seconds();
      latencies.add(r.latencies());
    }

    LoadFigure figure() {
      Latencies all = Latencies.merge(latencies);
      return new LoadFigure(subject,
          stack + "POST /v1/chat/completions, " + CONCURRENCY + " clients, " + CONCURRENCY
              + " API keys, off and on alternated in " + SLICES + " slices each"
              + (retried.get() == 0 ? "" : ", " + retried.get()
                  + " requests sent again on a fresh connection"),
          CONCURRENCY, seconds, calls, calls / seconds,
          all.percentile(50) / 1e6, all.percentile(99) / 1e6, Double.NaN, Double.NaN);
    }
  }

  /** How long a request may take, beyond its own timeout, before the run fails. */
  static final Duration GRACE = Duration.ofSeconds(5);

  /**
   * Sends a request and waits for its answer at most its timeout plus {@link #GRACE}, cancelling
   * the exchange then: a hung exchange fails the run at once, with its cause, instead of pinning a
   * worker that then never stops.
   */
  static HttpResponse<byte[]> send(HttpClient http, HttpRequest request) throws Exception {
    CompletableFuture<HttpResponse<byte[]>> answer =
        http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
    long wait = request.timeout().orElse(Duration.ZERO).plus(GRACE).toMillis();
    try {
      return answer.get(wait, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      answer.cancel(true);
      throw new IllegalStateException("no answer to " + request.uri() + " within " + wait + " ms", e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /**
   * Sends a request as {@link #send} does; when the connection it went out on was closed under it
   * (an {@link IOException} that is not a timeout, such as {@code HTTP/1.1 header parser received
   * no bytes}), sends it once more on a fresh connection, through a client of its own, and counts
   * that in {@code retried}. A second failure fails the run.
   */
  static HttpResponse<byte[]> sendRetrying(HttpClient http, HttpRequest request, AtomicLong retried)
      throws Exception {
    try {
      return send(http, request);
    } catch (HttpTimeoutException e) {
      throw e;
    } catch (IOException e) {
      retried.incrementAndGet();
      HttpClient fresh = HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
      try {
        return send(fresh, request);
      } catch (Exception again) {
        again.addSuppressed(e);
        throw again;
      }
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
