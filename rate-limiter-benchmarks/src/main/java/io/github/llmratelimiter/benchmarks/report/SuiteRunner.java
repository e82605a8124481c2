package io.github.llmratelimiter.benchmarks.report;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import io.github.llmratelimiter.benchmarks.http.HttpRun;
import io.github.llmratelimiter.benchmarks.memory.FootprintRun;
import io.github.llmratelimiter.benchmarks.redis.ClusterScaleRun;
import io.github.llmratelimiter.benchmarks.redis.PipelinedRun;
import io.github.llmratelimiter.benchmarks.redis.SlotRenewalRun;
import io.github.llmratelimiter.benchmarks.redis.UpstreamPipelinedRun;
import io.github.llmratelimiter.benchmarks.redis.RedisServer;
import java.time.Duration;
import java.util.Collection;
import java.util.EnumSet;
import java.util.Set;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatFactory;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.NoBenchmarksException;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.ProfilerConfig;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs the {@link Suite} through JMH, always with {@code -prof gc}, and writes the report.
 *
 * <p>Arguments: {@code --out FILE} (default {@code docs/benchmarks.md}), {@code --json FILE} (raw
 * JMH results), {@code --notes FILE} (Markdown appended as profiling notes, default {@code
 * bench/notes.md} if it exists), {@code --only REGEX} (run only the suite's benchmarks whose name
 * also matches; the runs outside the main JMH runs are named {@link Suite#PIPELINED}, {@link
 * Suite#UPSTREAMS_PIPELINED}, {@link Suite#RENEWALS}, {@link Suite#CLUSTER}, {@link Suite#HTTP}, {@link Suite#MEMORY} and {@link Suite#SCALING}), {@code --skip-inprocess}, {@code
 * --skip-redis}, {@code --skip-http}, {@code --skip-memory}, {@code --skip-scaling}, {@code
 * --skip-cluster} (leave out a part of the suite), {@code --cluster-warmup SECONDS} and {@code
 * --cluster-seconds SECONDS} (each Redis Cluster case's, default {@value #CLUSTER_WARMUP_SECONDS}
 * and {@value #CLUSTER_SECONDS}), {@code --load-warmup SECONDS} and {@code --load-seconds SECONDS} (warm-up
 * and measured period of each load run, default {@value #LOAD_WARMUP_SECONDS} and {@value
 * #LOAD_SECONDS}), {@code --http-warmup SECONDS} (each gateway's warm-up before the HTTP runs,
 * default {@value #HTTP_WARMUP_SECONDS}), {@code --http-seconds SECONDS} (each measured HTTP
 * slice, default {@value #HTTP_SLICE_SECONDS}), {@code --http-rounds N} (rounds of a slice off and
 * one on per stack, store and call, default {@value #HTTP_ROUNDS}), {@code --http-stores
 * memory,redis} (the stores of the HTTP runs, default both), {@code --sample-app JAR} (default {@code
 * sample-app/target/sample-app.jar}), {@code --reactive-module DIR} (the module of the reactive
 * gateway, default {@code integration-tests/webflux}), and these JMH options, which override the suite's
 * defaults: {@code -f}, {@code -wi}, {@code -w}, {@code -i}, {@code -r}, {@code -prof}, {@code
 * -jvmArgsAppend}. A benchmark that gets a wrong answer throws, and the run fails.
 */
public final class SuiteRunner {

  static final int FORKS = 1;
  static final int WARMUP_ITERATIONS = 3;
  static final TimeValue WARMUP_TIME = TimeValue.seconds(1);
  static final int MEASUREMENT_ITERATIONS = 5;
  static final TimeValue MEASUREMENT_TIME = TimeValue.seconds(1);
  /** A fixed heap, so that GC sizing does not differ between benchmarks. */
  static final List<String> JVM_ARGS = List.of("-Xms2g", "-Xmx2g");
  /** Warm-up iterations of each scaling run (one fork each, no allocation profiler). */
  static final int SCALING_WARMUP_ITERATIONS = 2;
  /** Measurement iterations of each scaling run. */
  static final int SCALING_ITERATIONS = 3;
  static final int LOAD_WARMUP_SECONDS = 10;
  static final int LOAD_SECONDS = 20;
  /**
   * Each gateway's warm-up before the HTTP runs, shared among the calls it serves. On 2 cores the
   * JIT still compiled 600 to 700 methods 40 s into the load, more of them with the limiter on
   * (bench/notes.md): a gateway stays up through the rounds of all its calls and stores, so the
   * later ones run warmer, and the CPU time of compilation falls in the slices measured first.
   */
  static final int HTTP_WARMUP_SECONDS = 20;
  /** Each measured HTTP slice. */
  static final int HTTP_SLICE_SECONDS = 3;
  /** Rounds per HTTP stack, store and call: the spread of their ratios is reported. */
  static final int HTTP_ROUNDS = 5;
  /** Each Redis Cluster case's warm-up (a fresh Cluster per case, the client's JVM already warm). */
  static final int CLUSTER_WARMUP_SECONDS = 5;
  /** Each Redis Cluster case's measured period. */
  static final int CLUSTER_SECONDS = 10;

  private SuiteRunner() {}

  /**
   * Runs the suite and writes the report.
   *
   * @param args the arguments described above
   * @throws Exception if an argument is wrong, a benchmark fails or a file cannot be written
   */
  public static void main(String[] args) throws Exception {
    Path out = Path.of("docs/benchmarks.md");
    Path json = null;
    Path notes = Path.of("bench/notes.md");
    String only = "";
    Path sampleApp = Path.of("sample-app/target/sample-app.jar");
    Path reactiveModule = Path.of("integration-tests/webflux");
    Duration loadWarmup = Duration.ofSeconds(LOAD_WARMUP_SECONDS);
    Duration loadMeasure = Duration.ofSeconds(LOAD_SECONDS);
    Duration httpWarmup = Duration.ofSeconds(HTTP_WARMUP_SECONDS);
    Duration httpSlice = Duration.ofSeconds(HTTP_SLICE_SECONDS);
    int httpRounds = HTTP_ROUNDS;
    Set<HttpRun.Store> httpStores = EnumSet.allOf(HttpRun.Store.class);
    Duration clusterWarmup = Duration.ofSeconds(CLUSTER_WARMUP_SECONDS);
    Duration clusterMeasure = Duration.ofSeconds(CLUSTER_SECONDS);
    Set<Suite.Part> parts = EnumSet.allOf(Suite.Part.class);
    List<String> jmhArgs = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out" -> out = Path.of(value(args, ++i));
        case "--json" -> json = Path.of(value(args, ++i));
        case "--notes" -> notes = Path.of(value(args, ++i));
        case "--only" -> only = value(args, ++i);
        case "--skip-inprocess" -> parts.remove(Suite.Part.IN_PROCESS);
        case "--skip-redis" -> parts.remove(Suite.Part.REDIS);
        case "--skip-http" -> parts.remove(Suite.Part.HTTP);
        case "--skip-memory" -> parts.remove(Suite.Part.MEMORY);
        case "--skip-scaling" -> parts.remove(Suite.Part.SCALING);
        case "--skip-cluster" -> parts.remove(Suite.Part.CLUSTER);
        case "--cluster-warmup" -> clusterWarmup = seconds(args[i], value(args, ++i), true);
        case "--cluster-seconds" -> clusterMeasure = seconds(args[i], value(args, ++i), false);
        case "--reactive-module" -> reactiveModule = Path.of(value(args, ++i));
        case "--sample-app" -> sampleApp = Path.of(value(args, ++i));
        case "--load-warmup" -> loadWarmup = seconds(args[i], value(args, ++i), true);
        case "--load-seconds" -> loadMeasure = seconds(args[i], value(args, ++i), false);
        case "--http-warmup" -> httpWarmup = seconds(args[i], value(args, ++i), true);
        case "--http-seconds" -> httpSlice = seconds(args[i], value(args, ++i), false);
        case "--http-rounds" -> httpRounds = count(args[i], value(args, ++i));
        case "--http-stores" -> httpStores = stores(value(args, ++i));
        default -> jmhArgs.add(args[i]);
      }
    }
    CommandLineOptions cli = new CommandLineOptions(jmhArgs.toArray(String[]::new));
    if (!cli.getIncludes().isEmpty()) {
      throw new CommandLineOptionException("pass --only REGEX, not a JMH include pattern");
    }
    String loadBefore = Machine.loadAverage();
    long start = System.nanoTime();
    List<RunResult> results = new ArrayList<>();
    for (Suite.Run run : Suite.RUNS) {
      if (parts.contains(run.part())) {
        results.addAll(run(options(cli, run, only)));
      }
    }
    List<ScalingRound> scaling = new ArrayList<>();
    if (parts.contains(Suite.Part.SCALING) && Suite.selected(Suite.SCALING, only)) {
      scaling.addAll(scaling(cli));
    }
    List<ClusterFigure> clusters = new ArrayList<>();
    if (parts.contains(Suite.Part.CLUSTER) && Suite.selected(Suite.CLUSTER, only)) {
      System.out.println("# Load run: " + Suite.CLUSTER);
      clusters.addAll(ClusterScaleRun.run(clusterWarmup, clusterMeasure));
    }
    List<MemoryFigure> memory = new ArrayList<>();
    if (parts.contains(Suite.Part.MEMORY) && Suite.selected(Suite.MEMORY, only)) {
      System.out.println("# Memory run: " + Suite.MEMORY);
      memory.addAll(FootprintRun.run(FootprintRun.KEYS));
    }
    List<LoadFigure> loads = new ArrayList<>();
    if (parts.contains(Suite.Part.REDIS) && Suite.selected(Suite.PIPELINED, only)) {
      System.out.println("# Load run: " + Suite.PIPELINED);
      for (LoadFigure f : PipelinedRun.run(loadWarmup, loadMeasure)) {
        System.out.println(f);
        loads.add(f);
      }
    }
    if (parts.contains(Suite.Part.REDIS) && Suite.selected(Suite.UPSTREAMS_PIPELINED, only)) {
      System.out.println("# Load run: " + Suite.UPSTREAMS_PIPELINED);
      for (LoadFigure f : UpstreamPipelinedRun.run(loadWarmup, loadMeasure,
          parts.contains(Suite.Part.CLUSTER))) {
        System.out.println(f);
        loads.add(f);
      }
    }
    if (parts.contains(Suite.Part.REDIS) && Suite.selected(Suite.RENEWALS, only)) {
      System.out.println("# Load run: " + Suite.RENEWALS);
      loads.addAll(SlotRenewalRun.run(renewalMeasure(loadMeasure)));
    }
    List<HttpFigure> http = new ArrayList<>();
    HttpRun.Settings httpSettings =
        new HttpRun.Settings(httpWarmup, httpSlice, httpRounds, httpStores);
    if (parts.contains(Suite.Part.HTTP) && Suite.selected(Suite.HTTP, only)) {
      System.out.println("# Load run: " + Suite.HTTP);
      http.addAll(HttpRun.run(sampleApp, reactiveModule, httpSettings)); // prints as it goes
    }
    double minutes = (System.nanoTime() - start) / 60e9;
    if (results.isEmpty() && loads.isEmpty() && memory.isEmpty() && scaling.isEmpty()
        && clusters.isEmpty() && http.isEmpty()) {
      throw new IllegalArgumentException("no benchmark of the suite matches --only " + only
          + " in the parts not skipped " + parts);
    }
    if (json != null && !results.isEmpty()) {
      Files.createDirectories(json.toAbsolutePath().getParent());
      try (PrintStream s = new PrintStream(Files.newOutputStream(json), true, StandardCharsets.UTF_8)) {
        ResultFormatFactory.getInstance(ResultFormatType.JSON, s).writeOut(results);
      }
    }
    List<Figure> figures = new ArrayList<>();
    for (RunResult r : results) {
      figures.add(figure(r));
    }
    String command = System.getProperty("bench.command",
        "java -cp rate-limiter-benchmarks/target/benchmarks.jar " + SuiteRunner.class.getName()
            + " " + String.join(" ", quoted(args))).strip();
    MarkdownReport.Context context = new MarkdownReport.Context(
        Machine.current(), versions(), settings(cli),
        loads.isEmpty() && http.isEmpty() ? ""
            : loadSettings(loadWarmup, loadMeasure, http.isEmpty() ? null : httpSettings),
        command, loadBefore,
        Machine.loadAverage(),
        minutes, Files.isRegularFile(notes) ? Files.readString(notes) : "");
    Path parent = out.toAbsolutePath().getParent();
    Files.createDirectories(parent);
    Files.writeString(out, MarkdownReport.render(figures, loads, memory, scaling, clusters,
        http, context));
    System.out.println("Wrote " + out.toAbsolutePath());
  }

  /** Each renewal case's measured period: a quarter of the load runs' (at least 2 s). */
  static Duration renewalMeasure(Duration loadMeasure) {
    return Duration.ofMillis(Math.max(2_000, loadMeasure.toMillis() / 4));
  }

  /**
   * The scaling rounds: {@link Suite#SCALING_ROUNDS} times the same benchmark at 1 and at 2
   * threads (each thread on its own key), in a fork of its own each, the order alternating from
   * round to round, so that a change of the machine's load or of where the JVM's threads run falls
   * on both counts alike.
   */
  static List<ScalingRound> scaling(CommandLineOptions cli) throws RunnerException {
    List<ScalingRound> rounds = new ArrayList<>();
    for (int round = 1; round <= Suite.SCALING_ROUNDS; round++) {
      boolean twoFirst = round % 2 == 0;
      double[] ops = new double[3];
      for (int threads : twoFirst ? new int[] {2, 1} : new int[] {1, 2}) {
        System.out.println("# Scaling round " + round + ", " + threads + " thread(s)");
        ChainedOptionsBuilder b = new OptionsBuilder()
            .include(Suite.SCALING_INCLUDE)
            .param("composition", "SEQUENTIAL")
            .threads(threads)
            .forks(1)
            .warmupIterations(cli.getWarmupIterations().orElse(SCALING_WARMUP_ITERATIONS))
            .warmupTime(cli.getWarmupTime().orElse(WARMUP_TIME))
            .measurementIterations(cli.getMeasurementIterations().orElse(SCALING_ITERATIONS))
            .measurementTime(cli.getMeasurementTime().orElse(MEASUREMENT_TIME))
            .jvmArgsAppend(jvmArgs(cli).toArray(String[]::new))
            .shouldFailOnError(true);
        Collection<RunResult> results = new Runner(b.build()).run();
        if (results.size() != 1) {
          throw new IllegalStateException("a scaling run gave " + results.size() + " results");
        }
        ops[threads] = results.iterator().next().getPrimaryResult().getScore();
      }
      rounds.add(new ScalingRound(round, twoFirst, ops[1], ops[2]));
    }
    return rounds;
  }

  private static Collection<RunResult> run(ChainedOptionsBuilder options) throws RunnerException {
    try {
      return new Runner(options.build()).run();
    } catch (NoBenchmarksException e) {
      return List.of(); // --only left nothing of this run
    }
  }

  private static List<String> quoted(String[] args) {
    List<String> quoted = new ArrayList<>();
    for (String arg : args) {
      quoted.add(arg.matches("[\\w./=:,+-]+") ? arg : "'" + arg.replace("'", "'\\''") + "'");
    }
    return quoted;
  }

  private static String value(String[] args, int i) {
    if (i >= args.length) {
      throw new IllegalArgumentException(args[i - 1] + " needs a value");
    }
    return args[i];
  }

  private static int count(String option, String value) {
    int n;
    try {
      n = Integer.parseInt(value);
    } catch (NumberFormatException e) {
      n = 0;
    }
    if (n < 1) {
      throw new IllegalArgumentException(option + " must be a whole number >= 1, but was " + value);
    }
    return n;
  }

  private static Duration seconds(String option, String value, boolean zeroAllowed) {
    long n;
    try {
      n = Long.parseLong(value);
    } catch (NumberFormatException e) {
      n = -1;
    }
    if (n < 0 || (n == 0 && !zeroAllowed)) {
      throw new IllegalArgumentException(option + " must be a whole number of seconds"
          + (zeroAllowed ? " >= 0" : " > 0") + ", but was " + value);
    }
    return Duration.ofSeconds(n);
  }

  static String loadSettings(Duration warmup, Duration measure, HttpRun.Settings http) {
    String s = "closed loop, warm-up " + warmup.toSeconds() + " s then " + measure.toSeconds()
        + " s measured per run; pipelined Redis " + PipelinedRun.CONCURRENCY + " threads";
    if (http == null) {
      return s;
    }
    return s + "; HTTP " + HttpRun.CONCURRENCY + " clients, each gateway warmed up on each call "
        + http.warmup().toSeconds() + " s, then in steps of "
        + HttpRun.WARMUP_STEP.toSeconds() + " s until its JIT compiler took under "
        + Math.round(HttpRun.QUIET_COMPILER_SHARE * 100) + " % of its CPU over a step (at most "
        + HttpRun.MAX_EXTRA_WARMUP.toSeconds() + " s more), then " + http.rounds()
        + " rounds of a " + http.slice().toSeconds() + " s slice off and one on (after 1 s of "
        + "re-warm each) per stack, store and call, gateway JVM args "
        + String.join(" ", HttpRun.GATEWAY_JVM_ARGS);
  }

  /** Parses {@code --http-stores}: {@code memory}, {@code redis} or both, comma-separated. */
  static Set<HttpRun.Store> stores(String value) {
    Set<HttpRun.Store> stores = EnumSet.noneOf(HttpRun.Store.class);
    for (String s : value.split(",")) {
      switch (s.strip()) {
        case "memory" -> stores.add(HttpRun.Store.MEMORY);
        case "redis" -> stores.add(HttpRun.Store.REDIS);
        default -> throw new IllegalArgumentException(
            "--http-stores must be memory, redis or memory,redis, but was " + value);
      }
    }
    return stores;
  }

  static ChainedOptionsBuilder options(CommandLineOptions cli, Suite.Run run, String only) {
    ChainedOptionsBuilder b = new OptionsBuilder()
        .include(Suite.include(run, only))
        .threads(run.threads())
        .forks(cli.getForkCount().orElse(FORKS))
        .warmupIterations(cli.getWarmupIterations().orElse(WARMUP_ITERATIONS))
        .warmupTime(cli.getWarmupTime().orElse(WARMUP_TIME))
        .measurementIterations(cli.getMeasurementIterations().orElse(MEASUREMENT_ITERATIONS))
        .measurementTime(cli.getMeasurementTime().orElse(MEASUREMENT_TIME))
        .jvmArgsAppend(jvmArgs(cli).toArray(String[]::new))
        .shouldFailOnError(true)
        .addProfiler("gc");
    for (ProfilerConfig p : cli.getProfilers()) {
      if (!p.getKlass().equals("gc")) {
        b.addProfiler(p.getKlass(), p.getOpts());
      }
    }
    return b;
  }

  private static List<String> jvmArgs(CommandLineOptions cli) {
    List<String> jvmArgs = new ArrayList<>(JVM_ARGS);
    jvmArgs.addAll(cli.getJvmArgsAppend().orElse(List.of()));
    return jvmArgs;
  }

  static String settings(CommandLineOptions cli) {
    StringBuilder profilers = new StringBuilder("gc");
    for (ProfilerConfig p : cli.getProfilers()) {
      if (!p.getKlass().equals("gc")) {
        profilers.append(", ").append(p.getKlass());
      }
    }
    return "throughput, " + cli.getForkCount().orElse(FORKS) + " fork(s), warmup "
        + cli.getWarmupIterations().orElse(WARMUP_ITERATIONS) + " × "
        + cli.getWarmupTime().orElse(WARMUP_TIME) + ", measurement "
        + cli.getMeasurementIterations().orElse(MEASUREMENT_ITERATIONS) + " × "
        + cli.getMeasurementTime().orElse(MEASUREMENT_TIME) + ", profilers " + profilers
        + ", JVM args " + String.join(" ", jvmArgs(cli)) + ", fail on error";
  }

  static Figure figure(RunResult r) {
    BenchmarkParams p = r.getParams();
    String name = p.getBenchmark();
    int dot = name.lastIndexOf('.');
    String type = name.substring(name.lastIndexOf('.', dot - 1) + 1, dot);
    String mode = p.getParam("composition");
    Result<?> primary = r.getPrimaryResult();
    double bytes = Double.NaN;
    for (Map.Entry<String, Result> e : r.getSecondaryResults().entrySet()) {
      if (e.getKey().endsWith("gc.alloc.rate.norm")) {
        bytes = e.getValue().getScore();
      }
    }
    return new Figure(type.replace("Benchmark", ""), mode == null ? "" : mode,
        name.substring(dot + 1), p.getThreads(), primary.getScore(), primary.getScoreError(), bytes);
  }

  /** The version in a dependency's {@code pom.properties}, which the shaded jar keeps. */
  private static String mavenVersion(String groupId, String artifactId) throws IOException {
    Properties p = new Properties();
    try (InputStream in = SuiteRunner.class.getResourceAsStream(
        "/META-INF/maven/" + groupId + "/" + artifactId + "/pom.properties")) {
      if (in == null) {
        return "unknown";
      }
      p.load(in);
    }
    return p.getProperty("version", "unknown");
  }

  static Map<String, String> versions() throws IOException {
    Properties p = new Properties();
    try (InputStream in = SuiteRunner.class.getResourceAsStream("/benchmark-versions.properties")) {
      if (in != null) {
        p.load(in);
      }
    }
    Map<String, String> versions = new LinkedHashMap<>();
    versions.put("rate-limiter", p.getProperty("rate-limiter", "unknown"));
    versions.put("JMH", p.getProperty("jmh", "unknown"));
    versions.put("Bucket4j (bucket4j_jdk17-core)", p.getProperty("bucket4j", "unknown"));
    versions.put("Resilience4j (resilience4j-ratelimiter)", p.getProperty("resilience4j", "unknown"));
    versions.put("Guava", p.getProperty("guava", "unknown"));
    versions.put("Caffeine (memory per key)",
        mavenVersion("com.github.ben-manes.caffeine", "caffeine"));
    versions.put("Bucket4j-Lettuce (bucket4j_jdk17-lettuce)", p.getProperty("bucket4j", "unknown"));
    versions.put("Lettuce", mavenVersion("io.lettuce", "lettuce-core"));
    versions.put("redis-server", RedisServer.version() + " (from embedded-redis "
        + p.getProperty("embedded-redis", "unknown") + ")");
    versions.put("Spring Boot (sample gateway)", p.getProperty("spring-boot", "unknown"));
    return versions;
  }
}
