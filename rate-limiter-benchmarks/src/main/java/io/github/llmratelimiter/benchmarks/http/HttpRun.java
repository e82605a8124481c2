package io.github.llmratelimiter.benchmarks.http;

import io.github.llmratelimiter.benchmarks.load.ClosedLoopLoad;
import io.github.llmratelimiter.benchmarks.load.Latencies;
import io.github.llmratelimiter.benchmarks.redis.CommandStats;
import io.github.llmratelimiter.benchmarks.redis.RedisServer;
import io.github.llmratelimiter.benchmarks.report.HttpFigure;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The two gateway stacks under load with the limiter off and on: the sample gateway (servlet) and
 * the reactive benchmark gateway, each serving a plain call, a streamed call and a call whose model
 * tokens are reconciled, with the limiter on the in-memory store and on Redis (a {@code
 * redis-server} this run starts). Each gateway runs in a JVM of its own on loopback; {@value
 * #CONCURRENCY} closed-loop clients (the JDK's {@link HttpClient}, HTTP/1.1, kept-alive
 * connections), each with its own API key, send {@code POST /v1/chat/completions}.
 *
 * <p>Per stack and policy (the policy without model tokens serves the plain and the streamed call,
 * the one with them the third), three gateways run at once: the limiter off, on in memory and on
 * Redis. Each call is measured right after a warm-up of every gateway on it (until its JIT
 * compiler is quiet), in rounds of one slice off and one on, the order alternating from round to
 * round, so that a change in the machine's other load falls on both. Over each slice the
 * gateway's process CPU time (the OS's accounting) is read, so that CPU per request compares the
 * limiter's cost on a machine where the load generator shares the cores.
 *
 * <p>Every answer must be a 200 with a body, carry the {@code RateLimit} header exactly when the
 * limiter is on, and a stream must end with {@code [DONE]} after a usage; the on gateway's {@code
 * ratelimiter.model.tokens} counter must grow exactly when the policy has model tokens. The limits
 * are high enough that nothing is denied.
 */
public final class HttpRun {

  /** The concurrent clients. */
  public static final int CONCURRENCY = 16;

  /** A step of warm-up past the settings' warm-up, after which the compiler's share is read. */
  public static final Duration WARMUP_STEP = Duration.ofSeconds(5);

  /** The JIT compiler threads' share of a gateway's CPU over a step under which it is warm. */
  public static final double QUIET_COMPILER_SHARE = 0.02;

  /** The most warm-up past the settings' warm-up, when the compiler never goes quiet. */
  public static final Duration MAX_EXTRA_WARMUP = Duration.ofSeconds(120);

  /** The gateway's JVM arguments: a fixed heap, as the JMH forks have. */
  public static final List<String> GATEWAY_JVM_ARGS = List.of("-Xms1g", "-Xmx1g");

  /** Application arguments of every gateway, off and on. */
  static final List<String> COMMON = List.of(
      "--management.server.address=127.0.0.1",
      "--management.endpoints.web.exposure.include=health,metrics",
      "--management.health.redis.enabled=false");

  /**
   * Application arguments of the sample gateway: none of its {@code application.yml} (no file is
   * named {@code bench-gateway}), so that its policies, plan quotas and call concurrency limit do
   * not apply and both stacks run the same policies; its stand-in model streams without pacing.
   */
  static final List<String> SAMPLE = List.of(
      "--spring.config.name=bench-gateway",
      "--gateway.stand-in.chunk-delay=0ms");

  /** Application arguments of a gateway with the limiter off. */
  static final List<String> LIMITER_OFF = List.of("--ratelimiter.enabled=false");

  /**
   * Application arguments of a gateway with the limiter on: the sample's hierarchy (a per-key level
   * above a per key-and-model level with a bucket, reserve-then-commit) on the chat route, limits
   * high enough that nothing is denied; {@link #NO_MODEL_TOKENS} or {@link #MODEL_TOKENS} added.
   */
  static final List<String> LIMITER_ON = List.of(
      "--ratelimiter.enabled=true",
      "--ratelimiter.composition=reserve-commit",
      "--ratelimiter.rpm.limit=1000000000",
      "--ratelimiter.policies.per-key.rpm.limit=1000000000",
      "--ratelimiter.policies.chat.parent=per-key",
      "--ratelimiter.policies.chat.scope=api-key-and-model",
      "--ratelimiter.policies.chat.rpm.limit=1000000000",
      "--ratelimiter.policies.chat.burst.capacity=1000000000",
      "--ratelimiter.policies.chat.burst.refill-per-second=1000000",
      "--ratelimiter.policies.chat.models.gpt-4o.rpm.limit=1000000000",
      "--ratelimiter.policies.models.rpm.limit=1000000000",
      "--ratelimiter.web.routes[0].include=/v1/chat/**",
      "--ratelimiter.web.routes[0].policy=chat");

  /**
   * Application arguments added with the limiter on for the plain and the streamed call: no
   * model-token limit (an empty value unsets the reactive gateway's default).
   */
  static final List<String> NO_MODEL_TOKENS = List.of("--ratelimiter.policies.chat.tpm.limit=");

  /**
   * Application arguments added with the limiter on for the call with model tokens: the chat level
   * limits model tokens, so each call reserves an estimate and settles it from the answer's usage.
   */
  static final List<String> MODEL_TOKENS = List.of(
      "--ratelimiter.policies.chat.tpm.limit=1000000000000",
      "--ratelimiter.tpm.default-completion-tokens=64");

  private static final String MODEL = "gpt-4o-mini";
  private static final String MESSAGES =
      "\"messages\":[{\"role\":\"user\",\"content\":\"Say hello to the benchmark.\"}]";
  private static final String PLAIN_BODY = "{\"model\":\"" + MODEL + "\"," + MESSAGES + "}";
  private static final String STREAM_BODY = "{\"model\":\"" + MODEL + "\",\"stream\":true,"
      + "\"stream_options\":{\"include_usage\":true}," + MESSAGES + "}";

  /** The gateway's timer of its store's decisions. */
  static final String DECISION_TIMER = "ratelimiter.decision.latency";
  /** The gateway's long-task timer of the HTTP requests it serves (Spring's observation). */
  static final String ACTIVE_REQUESTS = "http.server.requests.active";
  /** The gateway's counter of settled model tokens. */
  static final String MODEL_TOKEN_COUNTER = "ratelimiter.model.tokens";

  private HttpRun() {}

  /** A gateway stack and how to launch it. */
  enum Stack {
    /** The sample gateway: Spring MVC on Tomcat. */
    SERVLET(HttpFigure.SERVLET),
    /** The reactive benchmark gateway: WebFlux on Netty. */
    REACTIVE(HttpFigure.REACTIVE);

    final String label;

    Stack(String label) {
      this.label = label;
    }
  }

  /** A call the clients make. */
  enum Call {
    /** {@code POST /v1/chat/completions} answered with JSON. */
    PLAIN(HttpFigure.PLAIN, PLAIN_BODY, "application/json", false),
    /** The same with {@code "stream": true}: server-sent events, the usage in the last. */
    STREAMED(HttpFigure.STREAMED, STREAM_BODY, "text/event-stream", false),
    /** A plain call on a policy with model tokens: reserved, then reconciled from the usage. */
    TOKENS(HttpFigure.TOKENS, PLAIN_BODY, "application/json", true);

    final String label;
    final String body;
    final String accept;
    final boolean modelTokens;

    Call(String label, String body, String accept, boolean modelTokens) {
      this.label = label;
      this.body = body;
      this.accept = accept;
      this.modelTokens = modelTokens;
    }
  }

  /** The limiter's store. */
  public enum Store {
    /** The in-memory store. */
    MEMORY(HttpFigure.MEMORY),
    /** The Redis store, on a {@code redis-server} the run starts. */
    REDIS(HttpFigure.REDIS);

    final String label;

    Store(String label) {
      this.label = label;
    }
  }

  /**
   * How long the run measures.
   *
   * @param warmup each gateway's warm-up on each call, right before that call is measured
   * @param slice each measured slice
   * @param rounds the rounds per stack, store and call, each a slice off and a slice on
   * @param stores the stores the limiter runs on
   */
  public record Settings(Duration warmup, Duration slice, int rounds, Set<Store> stores) {

    /**
     * Validates the settings.
     *
     * @throws IllegalArgumentException if the warm-up is negative, the slice not positive, there
     *     is no round or no store
     */
    public Settings {
      if (warmup.isNegative()) {
        throw new IllegalArgumentException("warmup must be >= 0, but was " + warmup);
      }
      if (slice.isNegative() || slice.isZero()) {
        throw new IllegalArgumentException("slice must be > 0, but was " + slice);
      }
      if (rounds < 1) {
        throw new IllegalArgumentException("rounds must be >= 1, but was " + rounds);
      }
      if (stores.isEmpty()) {
        throw new IllegalArgumentException("stores must not be empty, but was " + stores);
      }
      stores = Set.copyOf(stores);
    }
  }

  /**
   * Runs both stacks, every call on every store of {@code settings}.
   *
   * @param sampleJar the sample app's executable jar
   * @param reactiveModule the {@code integration-tests/webflux} module's directory, built with
   *     {@code package}
   * @param settings the warm-up, slices, rounds and stores
   * @return one figure per stack, store and call
   * @throws IllegalStateException if an answer is wrong
   */
  public static List<HttpFigure> run(Path sampleJar, Path reactiveModule, Settings settings)
      throws IOException, InterruptedException {
    Map<Stack, List<String>> launch = new EnumMap<>(Stack.class);
    launch.put(Stack.SERVLET, SampleApp.jar(sampleJar));
    launch.put(Stack.REACTIVE, SampleApp.reactive(reactiveModule));
    List<HttpFigure> figures = new ArrayList<>();
    @Nullable RedisServer redis =
        settings.stores().contains(Store.REDIS) ? RedisServer.start() : null;
    try (@Nullable CommandStats stats = redis == null ? null : CommandStats.of(redis)) {
      for (Stack stack : Stack.values()) {
        for (List<Call> calls : List.of(List.of(Call.PLAIN, Call.STREAMED), List.of(Call.TOKENS))) {
          figures.addAll(run(stack, launch.get(stack), calls, settings, redis, stats));
        }
      }
    } finally {
      if (redis != null) {
        redis.close();
      }
    }
    return figures;
  }

  /** One stack and policy: its off gateway and an on gateway per store, up together. */
  private static List<HttpFigure> run(Stack stack, List<String> launch, List<Call> calls,
      Settings settings, @Nullable RedisServer redis, @Nullable CommandStats stats)
      throws IOException, InterruptedException {
    boolean tokens = calls.get(0).modelTokens;
    String name = stack.label + (tokens ? "-tokens" : "");
    List<SampleApp> apps = new ArrayList<>();
    try {
      Gateway off = new Gateway(start(apps, name + "-off", launch, stack, LIMITER_OFF), false,
          tokens, null);
      Map<Store, Gateway> on = new EnumMap<>(Store.class);
      for (Store store : Store.values()) {
        if (settings.stores().contains(store)) {
          List<String> args = new ArrayList<>(LIMITER_ON);
          args.addAll(tokens ? MODEL_TOKENS : NO_MODEL_TOKENS);
          if (store == Store.REDIS) {
            URI uri = URI.create(java.util.Objects.requireNonNull(redis).uri());
            args.addAll(List.of("--ratelimiter.store=redis",
                "--spring.data.redis.host=" + uri.getHost(),
                "--spring.data.redis.port=" + uri.getPort()));
          }
          on.put(store, new Gateway(start(apps, name + "-on-" + store.name().toLowerCase(),
              launch, stack, args), true, tokens, store == Store.REDIS ? stats : null));
        }
      }
      // a short re-warm before each slice: the clients' threads start again
      Duration rewarm = settings.warmup().compareTo(Duration.ofSeconds(1)) < 0
          ? settings.warmup() : Duration.ofSeconds(1);
      List<HttpFigure> figures = new ArrayList<>();
      for (Call call : calls) {
        // every gateway warmed on this call right before it is measured, so that no gateway is
        // measured on code its JIT has not compiled yet while the others have
        if (!settings.warmup().isZero()) {
          for (Gateway g : all(off, on)) {
            System.out.println("# HTTP warm-up: " + stack.label + " " + g + ", " + call.label);
            warm(g, call, settings.warmup(), rewarm);
          }
        }
        for (Map.Entry<Store, Gateway> e : on.entrySet()) {
          System.out.println("# HTTP: " + stack.label + ", " + e.getKey().label + ", "
              + call.label);
          HttpFigure f = compare(stack, e.getKey(), call, off, e.getValue(), settings, rewarm);
          System.out.printf(java.util.Locale.ROOT, "requests/s %,.0f off, %,.0f on, on ÷ off "
                  + "%s; CPU per request %.0f µs off, %.0f µs on, on ÷ off %s; without the JIT "
                  + "compiler threads %s (they took %.0f %% of it)%n",
              f.offRequestsPerSecond(), f.onRequestsPerSecond(), f.throughputRatio(),
              f.offCpuMicros(), f.onCpuMicros(), f.cpuRatio(), f.cpuWithoutCompilerRatio(),
              f.compilerShare() * 100);
          figures.add(f);
        }
      }
      return figures;
    } finally {
      for (SampleApp app : apps) {
        app.close();
      }
    }
  }

  /**
   * Warms a gateway on a call until its JIT compiler is quiet: for the warm-up, then in steps of
   * {@link #WARMUP_STEP}, each measured as a slice is (the same re-warm, the same readings of its
   * CPU and of its metrics endpoint, whose code the JIT compiles too), until its compiler threads
   * took under {@link #QUIET_COMPILER_SHARE} of its CPU over a step, for at most {@link
   * #MAX_EXTRA_WARMUP} more. A gateway measured while still compiling is charged for compiling,
   * not for its requests, and the gateway with the limiter has more code to compile.
   */
  private static void warm(Gateway g, Call call, Duration warmup, Duration rewarm)
      throws InterruptedException {
    if (warmup.isZero()) {
      return;
    }
    g.load(call, Duration.ZERO, warmup, null);
    Duration extra = Duration.ZERO;
    double share = 1;
    while (extra.compareTo(MAX_EXTRA_WARMUP) < 0) {
      HttpFigure.Slice step = g.measure(call, rewarm, WARMUP_STEP).slice;
      extra = extra.plus(WARMUP_STEP).plus(rewarm);
      share = step.cpuSeconds() <= 0 ? 0 : step.compilerCpuSeconds() / step.cpuSeconds();
      if (share < QUIET_COMPILER_SHARE) {
        break;
      }
    }
    System.out.printf(java.util.Locale.ROOT, "# warmed %d s, the compiler %.1f %% of the last "
        + "%d s%n", warmup.plus(extra).toSeconds(), share * 100, WARMUP_STEP.toSeconds());
  }

  private static List<Gateway> all(Gateway off, Map<Store, Gateway> on) {
    List<Gateway> all = new ArrayList<>();
    all.add(off);
    all.addAll(on.values());
    return all;
  }

  private static SampleApp start(List<SampleApp> apps, String name, List<String> launch,
      Stack stack, List<String> limiter) throws IOException, InterruptedException {
    List<String> args = new ArrayList<>(COMMON);
    if (stack == Stack.SERVLET) {
      args.addAll(SAMPLE);
    }
    args.addAll(limiter);
    SampleApp app = SampleApp.start(name, launch, args);
    apps.add(app);
    return app;
  }

  /** Measures one call on one store in rounds, the order alternating. */
  private static HttpFigure compare(Stack stack, Store store, Call call, Gateway off, Gateway on,
      Settings settings, Duration rewarm) throws InterruptedException {
    List<HttpFigure.Round> rounds = new ArrayList<>();
    List<Latencies> offLatencies = new ArrayList<>();
    List<Latencies> onLatencies = new ArrayList<>();
    Totals onTotals = new Totals();
    long retriedBefore = off.retried.get() + on.retried.get();
    long hungBefore = off.hung.get() + on.hung.get();
    for (int i = 0; i < settings.rounds(); i++) {
      boolean onFirst = i % 2 == 1;
      Measured first = (onFirst ? on : off).measure(call, rewarm, settings.slice());
      Measured second = (onFirst ? off : on).measure(call, rewarm, settings.slice());
      Measured offSlice = onFirst ? second : first;
      Measured onSlice = onFirst ? first : second;
      rounds.add(new HttpFigure.Round(onFirst, offSlice.slice, onSlice.slice));
      offLatencies.add(offSlice.latencies);
      onLatencies.add(onSlice.latencies);
      onTotals.add(onSlice);
    }
    Latencies offAll = Latencies.merge(offLatencies);
    Latencies onAll = Latencies.merge(onLatencies);
    long requests = onTotals.requests;
    if (onTotals.decisions < 1) {
      throw new IllegalStateException("the on gateway's " + DECISION_TIMER + " counted no "
          + "decision over " + requests + " requests");
    }
    return new HttpFigure(stack.label, store.label, call.label, rounds,
        offAll.percentile(50) / 1e6, offAll.percentile(99) / 1e6,
        onAll.percentile(50) / 1e6, onAll.percentile(99) / 1e6,
        onTotals.decisionSeconds * 1e6 / onTotals.decisions,
        store == Store.REDIS ? (double) onTotals.redisCalls / requests : Double.NaN,
        store == Store.REDIS ? (double) onTotals.redisUsec / requests : Double.NaN,
        off.retried.get() + on.retried.get() - retriedBefore,
        off.hung.get() + on.hung.get() - hungBefore);
  }

  /** What the on gateway's slices of one comparison added up to. */
  private static final class Totals {
    long requests;
    long decisions;
    double decisionSeconds;
    long redisCalls;
    long redisUsec;

    void add(Measured m) {
      requests += m.slice.requests();
      decisions += m.decisions;
      decisionSeconds += m.decisionSeconds;
      redisCalls += m.redisCalls;
      redisUsec += m.redisUsec;
    }
  }

  /** One measured slice and what was read around it. */
  private record Measured(HttpFigure.Slice slice, Latencies latencies, long decisions,
      double decisionSeconds, long redisCalls, long redisUsec) {}

  /** What is read at both ends of a slice. */
  private record Reading(double cpuSeconds, double compilerCpuSeconds, double decisions,
      double decisionSeconds, double modelTokens, CommandStats.@Nullable Totals redis) {}

  /** One gateway under load. */
  private static final class Gateway {

    private final SampleApp app;
    private final boolean limiter;
    private final boolean modelTokens;
    private final @Nullable CommandStats redis;
    private final HttpClient admin = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5))
        .build();
    /** Requests sent again on a fresh connection after theirs was closed under them. */
    private final AtomicLong retried = new AtomicLong();
    /** Requests sent again after the client hung on them while the gateway served none as old. */
    private final AtomicLong hung = new AtomicLong();

    Gateway(SampleApp app, boolean limiter, boolean modelTokens, @Nullable CommandStats redis) {
      this.app = app;
      this.limiter = limiter;
      this.modelTokens = modelTokens;
      this.redis = redis;
    }

    /**
     * Loads the gateway through a new client: a kept-alive connection left idle while another
     * gateway ran may have been closed by the server, and a POST on it would fail.
     */
    ClosedLoopLoad.Result load(Call call, Duration warmup, Duration measure,
        Reading @Nullable [] readings)
        throws InterruptedException {
      HttpClient http = HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
      HttpRequest[] requests = new HttpRequest[CONCURRENCY];
      for (int w = 0; w < CONCURRENCY; w++) {
        requests[w] = HttpRequest.newBuilder(URI.create(app.base() + "/v1/chat/completions"))
            .timeout(REQUEST_TIMEOUT)
            .header("Content-Type", "application/json")
            .header("Accept", call.accept)
            .header("Authorization", "Bearer sk-bench-" + w)
            .POST(HttpRequest.BodyPublishers.ofString(call.body))
            .build();
      }
      try {
        return ClosedLoopLoad.run(CONCURRENCY, warmup, measure, worker -> check(
            sendRetrying(http, requests[worker], retried, hung, this::serving), limiter, call),
            () -> {
              if (readings != null) {
                readings[0] = readStart();
              }
            },
            () -> {
              if (readings != null) {
                readings[1] = readEnd();
              }
            });
      } catch (IllegalStateException e) {
        // a hung call (the load's failure's cause) may still hang in the gateway: show where
        String threads = e.getCause() instanceof HungCallException
            ? "; the gateway's threads: " + app.threadDump() : "";
        throw new IllegalStateException(e.getMessage() + threads + "; gateway log: " + app.tail(),
            e);
      }
    }

    Measured measure(Call call, Duration warmup, Duration slice) throws InterruptedException {
      Reading[] readings = new Reading[2];
      ClosedLoopLoad.Result r = load(call, warmup, slice, readings);
      Reading start = readings[0];
      Reading end = readings[1];
      System.out.printf(java.util.Locale.ROOT,
          "#   %s: %d requests, CPU %.3f s, the compiler %.3f s%n", this, r.calls(),
          end.cpuSeconds() - start.cpuSeconds(),
          end.compilerCpuSeconds() - start.compilerCpuSeconds());
      double tokens = end.modelTokens() - start.modelTokens();
      if (limiter && (tokens > 0) != modelTokens) {
        throw new IllegalStateException("the on gateway settled " + tokens + " model tokens over "
            + r.calls() + " " + call.label + " calls, but its policy "
            + (modelTokens ? "limits" : "does not limit") + " model tokens");
      }
      return new Measured(
          new HttpFigure.Slice(r.calls(), r.seconds(), end.cpuSeconds() - start.cpuSeconds(),
              Math.max(0, end.compilerCpuSeconds() - start.compilerCpuSeconds())),
          r.latencies(), Math.round(end.decisions() - start.decisions()),
          end.decisionSeconds() - start.decisionSeconds(),
          end.redis() == null || start.redis() == null ? 0
              : end.redis().calls() - start.redis().calls(),
          end.redis() == null || start.redis() == null ? 0
              : end.redis().usec() - start.redis().usec());
    }

    /** Reads the counters, then the CPU: the reads' own CPU falls outside the slice. */
    private Reading readStart() {
      Reading counters = readCounters(0, 0);
      return new Reading(app.cpuSeconds(), app.compilerCpuSeconds(), counters.decisions(),
          counters.decisionSeconds(), counters.modelTokens(), counters.redis());
    }

    /** Reads the CPU, then the counters. */
    private Reading readEnd() {
      return readCounters(app.cpuSeconds(), app.compilerCpuSeconds());
    }

    private Reading readCounters(double cpuSeconds, double compilerCpuSeconds) {
      CommandStats.@Nullable Totals totals = redis == null ? null : redis.read();
      if (!limiter) {
        return new Reading(cpuSeconds, compilerCpuSeconds, 0, 0, 0, totals);
      }
      String timer = metric(DECISION_TIMER);
      return new Reading(cpuSeconds, compilerCpuSeconds, statistic(timer, "COUNT"),
          statistic(timer, "TOTAL_TIME"), statistic(metric(MODEL_TOKEN_COUNTER), "COUNT"), totals);
    }

    /** The gateway's Actuator metric, or an empty text when it has none yet. */
    private String metric(String name) {
      HttpRequest request = HttpRequest.newBuilder(
              URI.create(app.managementBase() + "/actuator/metrics/" + name))
          .timeout(Duration.ofSeconds(10)).build();
      try {
        HttpResponse<String> response = admin.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() == 404) {
          return "";
        }
        if (response.statusCode() != 200) {
          throw new IllegalStateException("the gateway's metric " + name + " answered "
              + response.statusCode() + ": " + response.body());
        }
        return response.body();
      } catch (IOException e) {
        throw new IllegalStateException("cannot read the gateway's metric " + name, e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted reading the metric " + name, e);
      }
    }

    /**
     * Whether the gateway serves a request as old as half a hung call's wait, from the longest
     * request in flight its {@value #ACTIVE_REQUESTS} long-task timer shows ({@code MAX}, seconds):
     * {@link HangCheck#STILL_SERVING} when it does or its Actuator cannot tell, else what it serves
     * (with the file of its threads).
     */
    String serving(Duration waited) {
      String active;
      try {
        active = metric(ACTIVE_REQUESTS);
      } catch (IllegalStateException e) {
        System.out.println("# a hung call's gateway " + this + " could not tell what it serves: "
            + e);
        return HangCheck.STILL_SERVING; // the gateway cannot tell: its fault until shown otherwise
      }
      System.out.println("# a hung call's gateway " + this + " serves: " + active);
      if (active.isEmpty()) {
        return HangCheck.STILL_SERVING;
      }
      double longest = statistic(active, "MAX");
      if (longest >= waited.toMillis() / 2000.0) {
        return HangCheck.STILL_SERVING;
      }
      return String.format(java.util.Locale.ROOT, "its longest request in flight %.3f s, "
          + "%.0f in flight; its threads: %s", longest, statistic(active, "ACTIVE_TASKS"),
          app.threadDump());
    }

    @Override
    public String toString() {
      return app.base() + (limiter ? " on" : " off");
    }
  }

  private static final Pattern MEASUREMENT = Pattern.compile(
      "\\{\\s*\"statistic\"\\s*:\\s*\"([A-Z_]+)\"\\s*,\\s*\"value\"\\s*:\\s*([-0-9.Ee+]+)\\s*}");

  /**
   * Reads a statistic ({@code COUNT}, {@code TOTAL_TIME}) of an Actuator metric's JSON, 0 when the
   * metric is absent (an empty text).
   *
   * @throws IllegalStateException if the metric has no such statistic
   */
  static double statistic(String metric, String statistic) {
    if (metric.isEmpty()) {
      return 0;
    }
    Matcher m = MEASUREMENT.matcher(metric);
    while (m.find()) {
      if (m.group(1).equals(statistic)) {
        return Double.parseDouble(m.group(2));
      }
    }
    throw new IllegalStateException("no " + statistic + " in " + metric);
  }

  /**
   * How long a load request may take: far beyond any latency of a working gateway, long enough for
   * a freshly started one's first calls on a loaded machine.
   */
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

  /** How long a request may take, beyond its own timeout, before the run fails. */
  public static final Duration GRACE = Duration.ofSeconds(5);

  /**
   * Sends a request and waits for its answer at most its timeout plus {@link #GRACE}, cancelling
   * the exchange then: a hung exchange fails the run at once, with its cause, instead of pinning a
   * worker that then never stops.
   */
  static HttpResponse<byte[]> send(HttpClient http, HttpRequest request) throws Exception {
    return send(http, request, GRACE);
  }

  private static HttpResponse<byte[]> send(HttpClient http, HttpRequest request, Duration grace)
      throws Exception {
    CompletableFuture<HttpResponse<byte[]>> answer =
        http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
    Duration wait = request.timeout().orElse(Duration.ZERO).plus(grace);
    try {
      return answer.get(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      String threads = clientThreadDump(); // before the cancel changes what they wait on
      answer.cancel(true);
      throw new HungCallException("no answer to " + request.uri() + " within " + wait.toMillis()
          + " ms; the client's threads: " + threads, wait, threads, e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /** A call with no complete answer within its timeout and grace. */
  static final class HungCallException extends IllegalStateException {

    /** How long the call waited. */
    final Duration waited;
    /** The file of the client's threads at that moment, or why there is none. */
    final String threads;

    HungCallException(String message, Duration waited, String threads, Throwable cause) {
      super(message, cause);
      this.waited = waited;
      this.threads = threads;
    }
  }

  /**
   * Tells whether a gateway still serves a request as old as a hung call: {@link #STILL_SERVING},
   * or a description of what it serves (the call hung in the client, the gateway had ended it or
   * never got it).
   */
  @FunctionalInterface
  interface HangCheck {

    /** What a check returns when the gateway serves a request as old as the hung call. */
    String STILL_SERVING = "";

    /**
     * @param waited how long the hung call waited
     * @return {@link #STILL_SERVING}, or what the gateway serves instead
     */
    String check(Duration waited);
  }

  /**
   * Writes this process's threads, with their locks, to a file kept after the run.
   *
   * @return the file, or why there is none
   */
  static String clientThreadDump() {
    try {
      Path dump = java.nio.file.Files.createTempFile("http-run-threads-", ".txt");
      StringBuilder out = new StringBuilder();
      for (java.lang.management.ThreadInfo t : java.lang.management.ManagementFactory
          .getThreadMXBean().dumpAllThreads(true, true, Integer.MAX_VALUE)) {
        out.append(t); // ThreadInfo.toString() stops at 8 frames: add the rest
        StackTraceElement[] stack = t.getStackTrace();
        for (int i = 8; i < stack.length; i++) {
          out.append("\tat ").append(stack[i]).append('\n');
        }
        out.append('\n');
      }
      java.nio.file.Files.writeString(dump, out);
      return dump.toString();
    } catch (IOException e) {
      return "(no thread dump: " + e + ")";
    }
  }

  /**
   * Sends a request as {@link #send} does, and once more, through a client of its own on a fresh
   * connection, when its exchange failed in the client and not in the gateway:
   *
   * <ul>
   *   <li>the connection it went out on was closed under it (an {@link IOException} that is not a
   *       timeout, such as {@code HTTP/1.1 header parser received no bytes}), counted in {@code
   *       retried};
   *   <li>it had no complete answer within its timeout and grace while the gateway served no
   *       request as old ({@code gateway} tells): the JDK client hung on an exchange the gateway
   *       had ended or never got; counted in {@code hung}, and printed with the client's threads.
   *       A hung call the gateway still serves fails the run (the gateway's fault).
   * </ul>
   *
   * A second failure fails the run.
   */
  static HttpResponse<byte[]> sendRetrying(HttpClient http, HttpRequest request, AtomicLong retried,
      AtomicLong hung, HangCheck gateway) throws Exception {
    return sendRetrying(http, request, retried, hung, gateway, GRACE);
  }

  static HttpResponse<byte[]> sendRetrying(HttpClient http, HttpRequest request, AtomicLong retried,
      AtomicLong hung, HangCheck gateway, Duration grace) throws Exception {
    try {
      return send(http, request, grace);
    } catch (HttpTimeoutException e) {
      throw e;
    } catch (HungCallException e) {
      String serving = gateway.check(e.waited);
      if (HangCheck.STILL_SERVING.equals(serving)) {
        throw e;
      }
      hung.incrementAndGet();
      System.out.println("# a call hung in the client for " + e.waited.toMillis() + " ms while "
          + "the gateway served no request as old (" + serving + "): sent again; the client's "
          + "threads: " + e.threads);
      return sendAgain(request, e, grace);
    } catch (IOException e) {
      retried.incrementAndGet();
      return sendAgain(request, e, grace);
    }
  }

  private static HttpResponse<byte[]> sendAgain(HttpRequest request, Exception first,
      Duration grace) throws Exception {
    HttpClient fresh = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5))
        .build();
    try {
      return send(fresh, request, grace);
    } catch (Exception again) {
      again.addSuppressed(first);
      throw again;
    }
  }

  /**
   * Checks an answer: a 200 with a body, the {@code RateLimit} header exactly when the limiter is
   * on, and for a streamed call an event stream whose usage comes before its closing {@code
   * [DONE]}.
   */
  static void check(HttpResponse<byte[]> response, boolean limiter, Call call) {
    String body = new String(response.body(), StandardCharsets.UTF_8);
    if (response.statusCode() != 200 || body.isEmpty()) {
      throw new IllegalStateException("the gateway answered " + response.statusCode() + ": " + body);
    }
    if (response.headers().firstValue("RateLimit").isPresent() != limiter) {
      throw new IllegalStateException("the limiter was " + (limiter ? "on" : "off")
          + " but the RateLimit header was " + (limiter ? "missing" : "present"));
    }
    if (call == Call.STREAMED) {
      int usage = body.lastIndexOf("\"usage\"");
      int done = body.lastIndexOf("[DONE]");
      if (!response.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream")
          || usage < 0 || done < usage || !body.strip().endsWith("[DONE]")) {
        throw new IllegalStateException("not an event stream ending in a usage and [DONE]: "
            + response.headers().firstValue("Content-Type").orElse("(no Content-Type)") + " "
            + body);
      }
    } else if (!body.contains("\"usage\"")) {
      throw new IllegalStateException("an answer without usage: " + body);
    }
  }
}
