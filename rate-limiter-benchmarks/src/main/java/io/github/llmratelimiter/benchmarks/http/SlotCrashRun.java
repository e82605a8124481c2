package io.github.llmratelimiter.benchmarks.http;

import io.github.llmratelimiter.benchmarks.redis.RedisServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A crashed gateway instance does not lock its tenants out, measured from outside on real
 * processes: one {@code redis-server} and two sample gateways on it ({@code redis} profile, every
 * rate-limiter setting at its default: a slot lease of 5 s, the chat level's two calls in flight
 * per API key and model).
 *
 * <ul>
 *   <li><b>Crash</b>, {@code repetitions} times: a fresh API key opens two slow streams on
 *       instance A (a new JVM each time); a third call of the key on instance B is refused with
 *       {@code CONCURRENCY_LIMIT}; A is killed with SIGKILL ({@link Process#destroyForcibly()});
 *       B is then called every 250 ms until it admits the key. The figure is the time from the
 *       kill to that admission.
 *   <li><b>Live holder</b>, when {@code live-minutes} is above 0: A holds two streams of the key
 *       for that long (a chunk every 15 s); B tries a third call every 10 s throughout, each of
 *       which must be refused with {@code CONCURRENCY_LIMIT} while the streams run.
 * </ul>
 *
 * <pre>{@code
 * bench/slot-crash [repetitions, default 10] [live-minutes, default 5]
 * }</pre>
 *
 * <p>Prints one line per repetition and a summary; exits with status 1 if a repetition took more
 * than 15 s or a call of the live holder's key was admitted while both its streams ran.
 */
public final class SlotCrashRun {

  /** The bound the crash must meet: B admits the key again within this long of the kill. */
  static final Duration BOUND = Duration.ofSeconds(15);
  private static final String MODEL = "gpt-4o-mini";
  private static final Duration POLL = Duration.ofMillis(250);

  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(2)).build();

  private SlotCrashRun() {}

  /**
   * Runs the crash repetitions and the live holder.
   *
   * @param args the repetitions (default 10) and the live holder's minutes (default 5; 0 skips it)
   */
  public static void main(String[] args) throws Exception {
    int repetitions = args.length > 0 ? Integer.parseInt(args[0]) : 10;
    int liveMinutes = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    if (repetitions < 0 || liveMinutes < 0) {
      throw new IllegalArgumentException("repetitions and live-minutes must be >= 0, but were "
          + repetitions + " and " + liveMinutes);
    }
    Path jar = Path.of(System.getProperty("bench.sampleApp", "sample-app/target/sample-app.jar"));
    boolean ok = new SlotCrashRun().run(jar, repetitions, liveMinutes);
    System.exit(ok ? 0 : 1);
  }

  private boolean run(Path jar, int repetitions, int liveMinutes) throws Exception {
    boolean ok = true;
    try (RedisServer redis = RedisServer.start();
        SampleApp b = SampleApp.start("slot-crash-b", SampleApp.jar(jar), redisArgs(redis, "100ms"))) {
      List<Long> freed = new ArrayList<>();
      for (int rep = 1; rep <= repetitions; rep++) {
        String key = "sk-crash-" + rep + "-" + System.nanoTime();
        SampleApp a = SampleApp.start("slot-crash-a" + rep, SampleApp.jar(jar),
            redisArgs(redis, "2s"));
        List<CompletableFuture<HttpResponse<InputStream>>> streams = new ArrayList<>();
        try {
          streams.add(stream(a, key, 20));
          streams.add(stream(a, key, 20));
          for (CompletableFuture<HttpResponse<InputStream>> s : streams) {
            int status = s.get(30, TimeUnit.SECONDS).statusCode();
            if (status != 200) {
              throw new IllegalStateException("a stream on A answered " + status);
            }
          }
          HttpResponse<String> third = call(b, key);
          if (third.statusCode() != 429 || !third.body().contains("CONCURRENCY_LIMIT")) {
            throw new IllegalStateException("a third call on B while A holds both slots answered "
                + third.statusCode() + ": " + third.body());
          }
          long killed = System.nanoTime();
          a.kill();
          long ms = awaitAdmitted(b, key, killed);
          freed.add(ms);
          boolean within = ms >= 0 && ms <= BOUND.toMillis();
          ok &= within;
          System.out.printf(Locale.ROOT, "crash %2d: B admitted the key %s after the SIGKILL%n",
              rep, ms < 0 ? "never (gave up at 60 s)" : ms + " ms");
        } finally {
          streams.forEach(s -> s.cancel(true));
          a.close();
        }
      }
      if (!freed.isEmpty()) {
        long within = freed.stream().filter(ms -> ms >= 0 && ms <= BOUND.toMillis()).count();
        System.out.printf(Locale.ROOT,
            "crash: %d of %d within %d s; min %d ms, max %d ms%n", within, freed.size(),
            BOUND.toSeconds(), freed.stream().mapToLong(Long::longValue).min().orElse(-1),
            freed.stream().mapToLong(Long::longValue).max().orElse(-1));
      }
      if (liveMinutes > 0) {
        ok &= liveHolder(jar, redis, b, Duration.ofMinutes(liveMinutes));
      }
    }
    return ok;
  }

  /** The live holder: both slots stay held for {@code length}; every third call is refused. */
  private boolean liveHolder(Path jar, RedisServer redis, SampleApp b, Duration length)
      throws Exception {
    String key = "sk-live-" + System.nanoTime();
    Duration chunk = Duration.ofSeconds(15);
    // a reply of n words takes about n + 2 chunk delays; "Echo from <model>:" adds three words
    int words = (int) (length.toSeconds() / chunk.toSeconds()) + 1;
    try (SampleApp a = SampleApp.start("slot-live-a", SampleApp.jar(jar),
        redisArgs(redis, chunk.toSeconds() + "s"))) {
      List<CompletableFuture<HttpResponse<InputStream>>> streams =
          List.of(stream(a, key, words), stream(a, key, words));
      List<InputStream> bodies = new ArrayList<>();
      for (CompletableFuture<HttpResponse<InputStream>> s : streams) {
        HttpResponse<InputStream> r = s.get(30, TimeUnit.SECONDS);
        if (r.statusCode() != 200) {
          throw new IllegalStateException("a stream on A answered " + r.statusCode());
        }
        bodies.add(r.body());
      }
      List<CompletableFuture<Void>> drained = new ArrayList<>();
      for (InputStream body : bodies) {
        drained.add(CompletableFuture.runAsync(() -> drain(body)));
      }
      long start = System.nanoTime();
      int refused = 0;
      int admitted = 0;
      int other = 0;
      while (System.nanoTime() - start < length.toNanos()
          && drained.stream().noneMatch(CompletableFuture::isDone)) {
        HttpResponse<String> third = call(b, key);
        if (drained.stream().anyMatch(CompletableFuture::isDone)) {
          break; // a stream ended before this call was decided: it does not count
        }
        if (third.statusCode() == 429 && third.body().contains("CONCURRENCY_LIMIT")) {
          refused++;
        } else if (third.statusCode() == 200) {
          admitted++;
        } else {
          other++;
          System.out.println("live holder: a third call answered " + third.statusCode() + ": "
              + third.body());
        }
        LockSupport.parkNanos(Duration.ofSeconds(10).toNanos());
      }
      double minutes = (System.nanoTime() - start) / 60e9;
      boolean ok = admitted == 0 && other == 0 && minutes >= length.toMinutes() - 0.25;
      System.out.printf(Locale.ROOT,
          "live holder: %.1f min with both slots held; third calls refused %d, admitted %d, "
              + "other %d%n", minutes, refused, admitted, other);
      return ok;
    }
  }

  private static void drain(InputStream body) {
    try (InputStream in = body) {
      in.transferTo(java.io.OutputStream.nullOutputStream());
    } catch (IOException e) {
      // the stream was cut: it has ended
    }
  }

  private static List<String> redisArgs(RedisServer redis, String chunkDelay) {
    return List.of("--spring.profiles.active=redis", "--spring.data.redis.url=" + redis.uri(),
        "--gateway.stand-in.chunk-delay=" + chunkDelay);
  }

  /** Polls B until it admits the key; the milliseconds from the kill, or -1 after 60 s. */
  private long awaitAdmitted(SampleApp b, String key, long killed)
      throws IOException, InterruptedException {
    while (System.nanoTime() - killed < TimeUnit.SECONDS.toNanos(60)) {
      HttpResponse<String> r = call(b, key);
      if (r.statusCode() == 200) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
      }
      if (r.statusCode() != 429 || !r.body().contains("CONCURRENCY_LIMIT")) {
        throw new IllegalStateException("B answered " + r.statusCode() + ": " + r.body());
      }
      LockSupport.parkNanos(POLL.toNanos());
    }
    return -1;
  }

  private CompletableFuture<HttpResponse<InputStream>> stream(SampleApp app, String key, int words) {
    String prompt = "word ".repeat(words).strip();
    return http.sendAsync(request(app, key, "{\"model\":\"" + MODEL + "\",\"stream\":true,"
        + "\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}"),
        HttpResponse.BodyHandlers.ofInputStream());
  }

  private HttpResponse<String> call(SampleApp app, String key)
      throws IOException, InterruptedException {
    return http.send(request(app, key, "{\"model\":\"" + MODEL + "\","
        + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"),
        HttpResponse.BodyHandlers.ofString());
  }

  private static HttpRequest request(SampleApp app, String key, String body) {
    return HttpRequest.newBuilder(URI.create(app.base() + "/v1/chat/completions"))
        .timeout(Duration.ofSeconds(30))
        .header("Authorization", "Bearer " + key)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build();
  }
}
