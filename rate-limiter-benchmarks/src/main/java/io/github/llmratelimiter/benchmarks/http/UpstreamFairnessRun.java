package io.github.llmratelimiter.benchmarks.http;

import io.github.llmratelimiter.benchmarks.redis.RedisServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The upstream's fair order across gateway instances, measured from outside in real time on real
 * processes: one {@code redis-server}, a stand-in provider account in this JVM ({@link
 * SlidingMinuteProvider}: 60 requests and 6,000 model tokens a sliding minute, OpenAI's headers,
 * a 429 with {@code retry-after} over them) and two sample gateways on that Redis ({@code redis}
 * profile, {@code gateway.provider.base-url} pointing at the provider, the upstream {@code
 * stand-in} configured at the provider's limits, chat calls waiting up to 30 s for it, the
 * tenants' own limits far above anything sent).
 *
 * <p>Three tenants send open-loop, each call alternately to either instance: two quiet tenants at
 * twice their fair share of the provider, one flooding at ten times its share. Every call asks for
 * {@value #CALL_TOKENS} model tokens (prompt and {@code max_tokens}), which the provider charges
 * in full, so its capacity is {@code min(60, 6000 / 150) = 40} calls a minute and a fair share
 * one third of that. After the sending stops, the calls still waiting are awaited.
 *
 * <pre>{@code
 * bench/upstream-fairness [--minutes 5] [--lower-after 120]
 *     [--stack servlet|reactive|scg-webflux|scg-servlet|all] [--out file.md]
 * }</pre>
 *
 * <p>The gateways are of one stack ({@link Stack}): the sample gateway (servlet, the default),
 * WebFlux on Netty, or Spring Cloud Gateway on either server; the reactive ones run under
 * BlockHound, proven active in each instance before the run (a handler that blocks its event loop
 * must fail), and every blocking call it catches during the run is counted (its request fails, in
 * the column "Other") and misses a target; the section lists the calls it caught and the statuses
 * counted as "Other". With {@code all}, the four stacks run one after the other and the report has
 * a section for each. The gateways' logs are kept in {@code
 * rate-limiter-benchmarks/target/upstream-fairness-logs/<stack>-a.log} and {@code -b.log}.
 *
 * <p>Prints and writes a markdown section: per tenant the calls sent, served and refused by the
 * gateway; the provider's calls and 429s; its capacity used; each tenant's share of the tokens
 * the provider accepted while all three were backlogged (each had a call outstanding) against its
 * fair share, and the flooder's largest excess over its share in that window (the provider knows
 * each call's tenant from a tag in its prompt, so service is counted where it is given, not
 * where the answers reach the clients; those figures are reported beside). Exits with status 1 when a
 * target is missed (provider 429s at most 1 % of its calls, capacity used at least 90
 * %, each quiet share within 10 % of fair, the flooder's excess at most one call's tokens).
 */
public final class UpstreamFairnessRun {

  /** Model tokens of every call: the prompt's estimate plus {@code max_tokens}. */
  static final int CALL_TOKENS = 150;
  private static final long PROVIDER_RPM = 60;
  private static final long PROVIDER_TPM = 6000;
  /** How long the provider takes to answer an accepted call. */
  private static final long PROVIDER_LATENCY_MS = 500;
  private static final Duration MAX_WAIT = Duration.ofSeconds(30);
  private static final String MODEL = "gpt-4o-mini";
  /**
   * The prompt before the tenant's number: with it 28 bytes, which the gateway estimates as 7 + 4
   * + 3 = 14 tokens; the provider reads the tenant from its {@code tenant-<n>} tag.
   */
  private static final String PROMPT = "fairness run prompt tenant-";
  private static final int MAX_TOKENS = CALL_TOKENS - 14;
  private static final Pattern TOTAL = Pattern.compile("\"total_tokens\"\\s*:\\s*(\\d+)");
  private static final Pattern TOKENS_LIMIT =
      Pattern.compile("\"modelTokensLimit\"\\s*:\\s*(\\d+)");
  private static final Pattern TOKENS_REMAINING =
      Pattern.compile("\"modelTokensRemaining\"\\s*:\\s*(\\d+)");
  private static final long SAMPLE_MS = 100;
  /** The provider's own 429 body, which the proxying stacks pass on as it is. */
  private static final String RELAYED_PROVIDER_429 = "Rate limit reached on the stand-in account";

  /** Each tenant's name, key and multiple of its fair share. */
  private record Tenant(String name, String key, int multiple) {}

  /** One call's outcome: when it ended (ms since the start), its status, tokens and kind. */
  private record Outcome(int tenant, int instance, long endMs, int status, long tokens,
      boolean providerRefusal) {}

  /** The limits the provider lowers to when asked ({@code --lower-after}): half of its own. */
  private static final long LOWERED_RPM = PROVIDER_RPM / 2;
  private static final long LOWERED_TPM = PROVIDER_TPM / 2;

  private final List<Tenant> tenants = List.of(
      new Tenant("quiet-1", "sk-fairness-quiet-1-0001", 2),
      new Tenant("quiet-2", "sk-fairness-quiet-2-0002", 2),
      new Tenant("flood", "sk-fairness-flood-00003", 10));
  private final HttpClient http = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(5)).build();
  private final ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
  private final AtomicInteger[] outstanding = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
  private final AtomicLong[] sent = {new AtomicLong(), new AtomicLong(), new AtomicLong()};
  private long startNanos;
  /** When the provider lowers its limits, in ms of sending; -1 for never. */
  private long lowerAfterMs = -1;
  /** Samples of the gateway's count against the provider's, and the most it was behind. */
  private long comparisons;
  private long worstBehind = Long.MIN_VALUE;
  private long worstBehindAt;
  /** When it did, in the provider's ms; -1 before. */
  private volatile long loweredAtProviderMs = -1;

  private UpstreamFairnessRun() {}

  /** What BlockHound prints in a reactive gateway once it is installed and proven to catch. */
  private static final String BLOCKHOUND_ACTIVE = "BlockHound is active";
  /** What BlockHound prints in a reactive gateway for every blocking call it caught. */
  private static final String BLOCKHOUND_CAUGHT = "BlockHound caught ";
  /** The handler of the reactive gateways that blocks its event loop. */
  private static final String BLOCKHOUND_PROBE = "/bench/blockhound-probe";
  private static final String BLOCKHOUND_FLAG = "-XX:+AllowRedefinitionToAddDeleteMethods";

  /**
   * A gateway stack the run measures: its name in {@code --stack}, what it is, and how its
   * gateway is launched.
   */
  enum Stack {
    /** The sample gateway: Spring MVC on Tomcat, the provider called by its {@code ChatModel}. */
    SERVLET("servlet", "the sample gateway (Spring MVC on Tomcat; its ChatModel calls the provider)",
        null, null, false),
    /** WebFlux on Netty forwarding with {@code WebClient}, under BlockHound. */
    REACTIVE("reactive", "WebFlux on Netty (integration-tests/webflux's ForwardingGateway, "
        + "forwarding with WebClient), under BlockHound", "integration-tests/webflux",
        "io.github.llmratelimiter.webflux.bench.ForwardingGateway", true),
    /** Spring Cloud Gateway Server WebFlux proxying to the provider, under BlockHound. */
    SCG_WEBFLUX("scg-webflux", "Spring Cloud Gateway Server WebFlux on Netty (a route to the "
        + "provider; the limiter's web filter on ratelimiter.web.routes), under BlockHound",
        "integration-tests/spring-cloud-gateway-webflux",
        "io.github.llmratelimiter.bench.scg.ScgWebFluxBenchGateway", true),
    /** Spring Cloud Gateway Server Web MVC proxying to the provider. */
    SCG_SERVLET("scg-servlet", "Spring Cloud Gateway Server Web MVC on Tomcat (a route to the "
        + "provider; the limiter's servlet filters on ratelimiter.web.routes)",
        "integration-tests/spring-cloud-gateway-servlet",
        "io.github.llmratelimiter.bench.scg.ScgServletBenchGateway", false);

    final String option;
    final String description;
    private final String module;
    private final String mainClass;
    final boolean blockHound;

    Stack(String option, String description, String module, String mainClass,
        boolean blockHound) {
      this.option = option;
      this.description = description;
      this.module = module;
      this.mainClass = mainClass;
      this.blockHound = blockHound;
    }

    /** The JVM arguments that launch one gateway of this stack. */
    List<String> launch(Path sampleJar) throws IOException {
      if (module == null) {
        return SampleApp.jar(sampleJar);
      }
      return blockHound ? SampleApp.testClassPath(Path.of(module), mainClass, BLOCKHOUND_FLAG)
          : SampleApp.testClassPath(Path.of(module), mainClass);
    }

    /**
     * The stacks an option names.
     *
     * @param option a stack's name or {@code all}
     * @return the stacks, in the order they run
     * @throws IllegalArgumentException if it names none
     */
    static List<Stack> of(String option) {
      if (option.equals("all")) {
        return List.of(values());
      }
      for (Stack stack : values()) {
        if (stack.option.equals(option)) {
          return List.of(stack);
        }
      }
      throw new IllegalArgumentException("--stack must be servlet, reactive, scg-webflux, "
          + "scg-servlet or all, but was " + option);
    }
  }

  /**
   * Runs the scenario.
   *
   * @param args {@code --minutes N} (default 5), {@code --lower-after S} (the provider lowers its
   *     limits to half after S seconds of sending; default never), {@code --stack
   *     servlet|reactive|scg-webflux|scg-servlet|all} (default {@code servlet}), {@code --out file}
   *     (default {@code
   *     rate-limiter-benchmarks/target/upstream-fairness.md})
   */
  public static void main(String[] args) throws Exception {
    double minutes = 5;
    Double lowerAfter = null;
    List<Stack> stacks = List.of(Stack.SERVLET);
    Path out = Path.of("rate-limiter-benchmarks/target/upstream-fairness.md");
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--minutes" -> minutes = Double.parseDouble(args[++i]);
        case "--lower-after" -> lowerAfter = Double.parseDouble(args[++i]);
        case "--stack" -> stacks = Stack.of(args[++i]);
        case "--out" -> out = Path.of(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]
            + "; use --minutes N, --lower-after S, --stack name or --out file");
      }
    }
    if (!(minutes > 0)) {
      throw new IllegalArgumentException("--minutes must be > 0, but was " + minutes);
    }
    if (lowerAfter != null && !(lowerAfter > 0 && lowerAfter < minutes * 60)) {
      throw new IllegalArgumentException("--lower-after must be above 0 and within the run's "
          + minutes * 60 + " s, but was " + lowerAfter);
    }
    Path jar = Path.of(System.getProperty("bench.sampleApp", "sample-app/target/sample-app.jar"));
    String command = System.getProperty("bench.command", "bench/upstream-fairness");
    StringBuilder all = new StringBuilder();
    boolean ok = true;
    for (Stack stack : stacks) {
      UpstreamFairnessRun run = new UpstreamFairnessRun();
      run.lowerAfterMs = lowerAfter == null ? -1 : (long) (lowerAfter * 1000);
      Section section = run.run(stack, jar, minutes, command);
      ok &= section.ok();
      all.append(all.isEmpty() ? "" : "\n").append(section.text());
      // each section is written as soon as it is measured
      Files.createDirectories(out.toAbsolutePath().getParent());
      Files.writeString(out, all);
    }
    System.exit(ok ? 0 : 1);
  }

  /** One stack's section of the report, and whether it met every target. */
  private record Section(String text, boolean ok) {}

  /**
   * The application arguments of each gateway instance of a stack: the sample's ({@link
   * #gatewayArgs}), or for the other stacks the same settings in their properties (the store
   * {@code redis} for the sample's profile, {@code bench.provider.*} for {@code
   * gateway.provider.*}; the raised limits of the sample's plans are left out, since the other
   * gateways have no plans).
   */
  static List<String> stackArgs(Stack stack, String redisUri, String providerBase) {
    List<String> sample = gatewayArgs(redisUri, providerBase);
    if (stack == Stack.SERVLET) {
      return sample;
    }
    // the endpoint the run reads the gateway's count from
    List<String> args = new ArrayList<>(
        List.of("--management.endpoints.web.exposure.include=health,ratelimiter"));
    for (String arg : sample) {
      if (arg.equals("--spring.profiles.active=redis")) {
        args.add("--ratelimiter.store=redis");
      } else if (arg.startsWith("--ratelimiter.plans.")) {
        continue;
      } else if (arg.startsWith("--gateway.provider.")) {
        args.add("--bench.provider." + arg.substring("--gateway.provider.".length()));
      } else {
        args.add(arg);
      }
    }
    return args;
  }

  /** The application arguments of each gateway instance. */
  static List<String> gatewayArgs(String redisUri, String providerBase) {
    return List.of("--spring.profiles.active=redis", "--spring.data.redis.url=" + redisUri,
        "--ratelimiter.key-id-secret=upstream-fairness-run-secret",
        "--gateway.provider.base-url=" + providerBase,
        "--gateway.provider.api-key=sk-provider-account",
        "--gateway.provider.timeout=30s",
        "--ratelimiter.upstreams.stand-in.rpm=" + PROVIDER_RPM,
        "--ratelimiter.upstreams.stand-in.tpm=" + PROVIDER_TPM,
        "--ratelimiter.upstreams.stand-in.models=gpt-4o*",
        "--ratelimiter.policies.chat.max-wait=" + MAX_WAIT.toSeconds() + "s",
        // the tenants' own limits never bind: only the upstream decides
        "--ratelimiter.rpm.limit=1000000",
        "--ratelimiter.policies.per-key.rpm.limit=1000000",
        "--ratelimiter.policies.chat.rpm.limit=1000000",
        "--ratelimiter.policies.chat.burst.capacity=1000000",
        "--ratelimiter.policies.chat.burst.refill-per-second=100000",
        "--ratelimiter.policies.chat.tpm.limit=1000000000",
        "--ratelimiter.policies.chat.concurrency.limit=100000",
        "--ratelimiter.plans.free.policies.chat.rpm.limit=1000000",
        "--ratelimiter.plans.free.policies.per-key.quotas.daily-spend.limit=1000000");
  }

  private Section run(Stack stack, Path jar, double minutes, String command) throws Exception {
    String loadBefore = loadAverage();
    try (RedisServer redis = RedisServer.start();
        SlidingMinuteProvider provider =
            new SlidingMinuteProvider(PROVIDER_RPM, PROVIDER_TPM, PROVIDER_LATENCY_MS);
        SampleApp a = SampleApp.start("fairness-a", stack.launch(jar),
            stackArgs(stack, redis.uri(), provider.base()));
        SampleApp b = SampleApp.start("fairness-b", stack.launch(jar),
            stackArgs(stack, redis.uri(), provider.base()))) {
      List<SampleApp> instances = List.of(a, b);
      int[] caughtBefore = stack.blockHound ? proveBlockHound(instances) : null;
      double capacityPerMinute = Math.min(PROVIDER_RPM, (double) PROVIDER_TPM / CALL_TOKENS);
      double fairPerMinute = capacityPerMinute / tenants.size();
      long runMs = (long) (minutes * 60_000);
      long providerStartMs = provider.elapsedMs();
      startNanos = System.nanoTime();
      ScheduledExecutorService clock = Executors.newScheduledThreadPool(2);
      List<boolean[]> backlog = new ArrayList<>();
      try {
        for (int t = 0; t < tenants.size(); t++) {
          int tenant = t;
          long periodMicros = (long) (60e6 / (fairPerMinute * tenants.get(t).multiple()));
          AtomicLong n = new AtomicLong();
          clock.scheduleAtFixedRate(() -> send(tenant,
              (int) (n.getAndIncrement() % instances.size()), instances),
              t * 100_000L, periodMicros, TimeUnit.MICROSECONDS);
        }
        clock.scheduleAtFixedRate(() -> compare(provider, instances.get(0)), 1000, 1000,
            TimeUnit.MILLISECONDS);
        if (lowerAfterMs >= 0) {
          clock.schedule(() -> {
            provider.lower(LOWERED_RPM, LOWERED_TPM);
            loweredAtProviderMs = provider.elapsedMs();
          }, lowerAfterMs, TimeUnit.MILLISECONDS);
        }
        clock.scheduleAtFixedRate(() -> {
          boolean[] s = new boolean[tenants.size()];
          for (int t = 0; t < s.length; t++) {
            s[t] = outstanding[t].get() > 0;
          }
          synchronized (backlog) {
            backlog.add(s);
          }
        }, SAMPLE_MS, SAMPLE_MS, TimeUnit.MILLISECONDS);
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(runMs)); // the run's length, in real time
      } finally {
        clock.shutdownNow();
      }
      long sendingEndMs = elapsedMs();
      long providerEndMs = provider.elapsedMs();
      SlidingMinuteProvider.Counts atEnd = provider.counts();
      // the calls still waiting end within the longest wait (and the provider's answer)
      long drainDeadline = System.nanoTime() + MAX_WAIT.plusSeconds(30).toNanos();
      while (total(outstanding) > 0 && System.nanoTime() < drainDeadline) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
      }
      SlidingMinuteProvider.Counts finalCounts = provider.counts();
      String report = report(command, minutes, loadBefore, loadAverage(), sendingEndMs,
          providerStartMs, providerEndMs, atEnd, finalCounts, backlog, fairPerMinute);
      boolean ok = report.contains("all targets met");
      StringBuilder notes = new StringBuilder();
      if (stack.blockHound) {
        int caught = 0;
        Map<String, Integer> calls = new TreeMap<>();
        for (int i = 0; i < instances.size(); i++) {
          String log = instances.get(i).log();
          caught += count(log, BLOCKHOUND_CAUGHT) - caughtBefore[i];
          int from = 0;
          for (int k = 0; k < caughtBefore[i]; k++) {
            from = log.indexOf(BLOCKHOUND_CAUGHT, from) + BLOCKHOUND_CAUGHT.length();
          }
          for (int at = log.indexOf(BLOCKHOUND_CAUGHT, from); at >= 0;
              at = log.indexOf(BLOCKHOUND_CAUGHT, at + 1)) {
            int end = log.indexOf('\n', at);
            calls.merge(log.substring(at + BLOCKHOUND_CAUGHT.length(), end < 0 ? log.length() : end)
                .replaceAll("on thread (\\S+?)-?\\d+$", "on thread $1"), 1, Integer::sum);
          }
        }
        ok &= caught == 0;
        notes.append(String.format(Locale.ROOT, "BlockHound was active in both instances (each "
            + "reported it at start-up, and failed a probe that blocks its event loop); it caught "
            + "%d blocking calls during the run%s.%n%n", caught,
            caught == 0 ? "" : " (each failed its request: see \"Other\"), a missed target"));
        calls.forEach((call, n) -> notes.append("- ").append(n).append(" x ").append(call)
            .append('\n'));
        notes.append(calls.isEmpty() ? "" : "\n");
      }
      Map<Integer, Integer> others = new TreeMap<>();
      for (Outcome o : outcomes) {
        if (o.status() != 200 && o.status() != 429) {
          others.merge(o.status(), 1, Integer::sum);
        }
      }
      if (!others.isEmpty()) {
        notes.append("\"Other\" by status (-1: no answer within the client's timeout): ")
            .append(others).append(".\n\n");
      }
      Path logs = Path.of("rate-limiter-benchmarks/target/upstream-fairness-logs");
      Files.createDirectories(logs);
      for (int i = 0; i < instances.size(); i++) {
        Files.writeString(logs.resolve(stack.option + "-" + (char) ('a' + i) + ".log"),
            instances.get(i).log());
      }
      String section = withStack(report, stack, notes.toString());
      System.out.println(section);
      return new Section(section, ok);
    }
  }

  /**
   * Samples the model tokens the gateway counts on the upstream (its limit less what it admits,
   * from the endpoint) against those in the provider's minute. The gateway counts each call a
   * minute and its margin from admission, so it should never count fewer than the provider;
   * fewer means calls it no longer counts while the provider does.
   */
  private void compare(SlidingMinuteProvider provider, SampleApp instance) {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(
              URI.create(instance.managementBase() + "/actuator/ratelimiter"))
          .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
      long providerTokens = provider.windowTokens();
      Matcher limit = TOKENS_LIMIT.matcher(r.body());
      Matcher remaining = TOKENS_REMAINING.matcher(r.body());
      // only while the gateway admits tokens is its count exact (at 0 it says only "at least")
      if (limit.find() && remaining.find() && Long.parseLong(remaining.group(1)) > 0) {
        long counted = Long.parseLong(limit.group(1)) - Long.parseLong(remaining.group(1));
        long behind = providerTokens - counted;
        synchronized (this) {
          comparisons++;
          if (behind > worstBehind) {
            worstBehind = behind;
            worstBehindAt = elapsedMs();
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      // a sample lost: the next one counts
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The report's section for one stack: its heading names the stack, and a paragraph under it
   * says what the stack's gateways are, what BlockHound saw on a reactive one, and the statuses
   * counted as "Other".
   */
  static String withStack(String report, Stack stack, String notes) {
    int headingEnd = report.indexOf('\n');
    return report.substring(0, headingEnd) + ": stack `" + stack.option + "`\n\n"
        + "The two gateways: " + stack.description + ".\n\n" + notes
        + report.substring(headingEnd + 1).stripLeading();
  }

  /**
   * Proves BlockHound active in each reactive gateway: its start-up line, and a 500 from the
   * handler that blocks its event loop, whose caught call shows in its log.
   *
   * @return each instance's count of caught calls after its probe
   * @throws IllegalStateException if an instance does not prove it
   */
  private int[] proveBlockHound(List<SampleApp> instances) throws Exception {
    int[] caught = new int[instances.size()];
    for (int i = 0; i < instances.size(); i++) {
      SampleApp app = instances.get(i);
      if (!app.log().contains(BLOCKHOUND_ACTIVE)) {
        throw new IllegalStateException("BlockHound did not report itself active in the gateway "
            + "on port " + app.port + ": " + app.tail());
      }
      HttpResponse<String> probe = http.send(HttpRequest.newBuilder(
          URI.create(app.base() + BLOCKHOUND_PROBE)).timeout(Duration.ofSeconds(10)).build(),
          HttpResponse.BodyHandlers.ofString());
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (count(app.log(), BLOCKHOUND_CAUGHT) == 0 && System.nanoTime() - deadline < 0) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // the log is written after the 500
      }
      if (probe.statusCode() != 500 || count(app.log(), BLOCKHOUND_CAUGHT) == 0) {
        throw new IllegalStateException("BlockHound did not catch the probe that blocks the event "
            + "loop of the gateway on port " + app.port + " (status " + probe.statusCode() + "): "
            + app.tail());
      }
      caught[i] = count(app.log(), BLOCKHOUND_CAUGHT);
    }
    return caught;
  }

  private static int count(String text, String part) {
    int n = 0;
    for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + part.length())) {
      n++;
    }
    return n;
  }

  private static int total(AtomicInteger[] counters) {
    int sum = 0;
    for (AtomicInteger c : counters) {
      sum += c.get();
    }
    return sum;
  }

  private long elapsedMs() {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
  }

  private void send(int tenant, int at, List<SampleApp> instances) {
    SampleApp instance = instances.get(at);
    sent[tenant].incrementAndGet();
    outstanding[tenant].incrementAndGet();
    HttpRequest request = HttpRequest.newBuilder(URI.create(instance.base() + "/v1/chat/completions"))
        .timeout(MAX_WAIT.plusSeconds(30))
        .header("Authorization", "Bearer " + tenants.get(tenant).key())
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + MODEL + "\",\"max_tokens\":"
            + MAX_TOKENS + ",\"messages\":[{\"role\":\"user\",\"content\":\"" + PROMPT + tenant
            + "\"}]}"))
        .build();
    http.sendAsync(request, HttpResponse.BodyHandlers.ofString()).whenComplete((r, e) -> {
      long end = elapsedMs();
      if (r == null) {
        outcomes.add(new Outcome(tenant, at, end, -1, 0, false));
      } else {
        Matcher m = TOTAL.matcher(r.body());
        long tokens = r.statusCode() == 200 && m.find() ? Long.parseLong(m.group(1)) : 0;
        outcomes.add(new Outcome(tenant, at, end, r.statusCode(), tokens,
            r.statusCode() == 429 && (r.body().contains("model provider's capacity")
                || r.body().contains(RELAYED_PROVIDER_429))));
      }
      outstanding[tenant].decrementAndGet();
    });
  }

  private String report(String command, double minutes, String loadBefore, String loadAfter,
      long sendingEndMs, long providerStartMs, long providerEndMs,
      SlidingMinuteProvider.Counts atEnd, SlidingMinuteProvider.Counts finalCounts,
      List<boolean[]> backlog, double fairPerMinute) {
    StringBuilder md = new StringBuilder();
    md.append("## The upstream's fair order, two instances on one Redis (real time)\n\n");
    md.append(String.format(Locale.ROOT, "`%s`: %s min of sending; a stand-in provider of %d "
        + "requests and %,d model tokens a sliding minute (answers after %d ms); two sample gateways "
        + "on one redis-server (upstream `stand-in` at %d rpm and %,d tpm, max-wait %d s); every call "
        + "%d tokens, so a fair share is %.2f calls a minute; each tenant's calls alternate between "
        + "the instances. Load average before %s, after %s (%d cores).%n%n", command,
        fmt(minutes), PROVIDER_RPM, PROVIDER_TPM, PROVIDER_LATENCY_MS, PROVIDER_RPM, PROVIDER_TPM,
        MAX_WAIT.toSeconds(), CALL_TOKENS, fairPerMinute, loadBefore, loadAfter,
        Runtime.getRuntime().availableProcessors()));
    List<Outcome> all = new ArrayList<>(outcomes);
    all.sort((x, y) -> Long.compare(x.endMs(), y.endMs()));
    md.append("| Tenant (rate) | Sent | Served (200) | Gateway 429 | Provider 429 passed on | Other |\n");
    md.append("|---|---|---|---|---|---|\n");
    for (int t = 0; t < tenants.size(); t++) {
      int tenant = t;
      long served = all.stream().filter(o -> o.tenant() == tenant && o.status() == 200).count();
      long passedOn = all.stream().filter(o -> o.tenant() == tenant && o.providerRefusal()).count();
      long gateway429 = all.stream().filter(o -> o.tenant() == tenant && o.status() == 429
          && !o.providerRefusal()).count();
      long other = all.stream().filter(o -> o.tenant() == tenant && o.status() != 200
          && o.status() != 429).count();
      md.append(String.format(Locale.ROOT, "| %s (%dx fair) | %d | %d | %d | %d | %d |%n",
          tenants.get(t).name(), tenants.get(t).multiple(), sent[t].get(), served, gateway429,
          passedOn, other));
    }
    md.append("\nTokens served per minute of sending (by the end of each call):\n\n"
        + "| Minute | quiet-1 | quiet-2 | flood |\n|---|---|---|---|\n");
    for (long minute = 0; minute * 60_000 < sendingEndMs - 1000; minute++) {
      long[] perTenant = new long[tenants.size()];
      for (Outcome o : all) {
        if (o.status() == 200 && o.endMs() >= minute * 60_000 && o.endMs() < (minute + 1) * 60_000
            && o.endMs() <= sendingEndMs) {
          perTenant[o.tenant()] += o.tokens();
        }
      }
      md.append(String.format(Locale.ROOT, "| %d | %,d | %,d | %,d |%n", minute + 1, perTenant[0],
          perTenant[1], perTenant[2]));
    }
    double windowMinutes = (providerEndMs - providerStartMs) / 60_000.0;
    long calls = atEnd.accepted().stream().filter(c -> c[0] >= providerStartMs).count();
    long tokens = atEnd.accepted().stream().filter(c -> c[0] >= providerStartMs)
        .mapToLong(c -> c[1]).sum();
    double refusedPct = finalCounts.received() == 0 ? 0
        : 100.0 * finalCounts.refused() / finalCounts.received();
    if (!finalCounts.refusals().isEmpty()) {
      md.append('\n');
    }
    for (long[] r : finalCounts.refusals()) {
      md.append(String.format(Locale.ROOT, "- provider 429 at %.3f s of sending: retry-after-ms %d,"
          + " %d requests and %,d tokens in its minute%n", (r[0] - providerStartMs) / 1000.0, r[1],
          r[2], r[3]));
    }
    long lowered = loweredAtProviderMs;
    // the provider's capacity over the sending: its limits until it lowered them, the lower after
    double fullMinutes = lowered < 0 ? windowMinutes : (lowered - providerStartMs) / 60_000.0;
    double lowMinutes = windowMinutes - fullMinutes;
    double requestsUsed = 100.0 * calls / (PROVIDER_RPM * fullMinutes + LOWERED_RPM * lowMinutes);
    double tokensUsed = 100.0 * tokens / (PROVIDER_TPM * fullMinutes + LOWERED_TPM * lowMinutes);
    md.append(String.format(Locale.ROOT, "%nProvider: received %d calls, refused %d with a 429 "
        + "(%.2f %%); during the %.2f min of sending it accepted %d calls (%.1f %% of its requests' "
        + "limit) and %,d tokens (%.1f %% of its tokens' limit).%n", finalCounts.received(),
        finalCounts.refused(), refusedPct, windowMinutes, calls, requestsUsed, tokens, tokensUsed));
    synchronized (this) {
      md.append(String.format(Locale.ROOT, "%nThe gateway's count of the upstream's model tokens "
          + "against the provider's minute, sampled every second while the gateway admitted tokens (%d "
          + "samples): the gateway counted "
          + "at most %,d tokens fewer than the provider (at %.1f s; negative: it always counted "
          + "more, as its minute is longer by the margin).%n", comparisons, worstBehind,
          worstBehindAt / 1000.0));
    }
    boolean followed = true;
    if (lowered >= 0) {
      followed = lowered(md, all, finalCounts, providerStartMs, providerEndMs, lowered);
    }

    // the window: from the first sample after the longest wait at which all three are backlogged
    int first = -1;
    long allBacklogged = 0;
    long samples = 0;
    synchronized (backlog) {
      for (int i = 0; i < backlog.size(); i++) {
        boolean all3 = backlog.get(i)[0] && backlog.get(i)[1] && backlog.get(i)[2];
        if ((i + 1) * SAMPLE_MS < MAX_WAIT.toMillis()) {
          continue;
        }
        if (first < 0 && all3) {
          first = i;
        }
        if (first >= 0) {
          samples++;
          allBacklogged += all3 ? 1 : 0;
        }
      }
    }
    boolean ok = followed && refusedPct <= 1.0 && Math.max(requestsUsed, tokensUsed) >= 90.0;
    if (first < 0) {
      md.append("\nThe three tenants were never backlogged at once after the first ")
          .append(MAX_WAIT.toSeconds()).append(" s: no shares measured.\n");
      ok = false;
    } else {
      long from = (first + 1) * SAMPLE_MS;
      // where the provider accepted each call (its clock shifted to the run's): the service itself
      List<long[]> atProvider = new ArrayList<>();
      for (long[] c : finalCounts.accepted()) {
        if (c.length > 2 && c[2] >= 0 && c[2] < tenants.size()) {
          atProvider.add(new long[] {c[0] - providerStartMs, c[2], c[1]});
        }
      }
      // where each served call's answer reached its client, after the gateway's way back
      List<long[]> atClients = new ArrayList<>();
      for (Outcome o : all) {
        if (o.status() == 200) {
          atClients.add(new long[] {o.endMs(), o.tenant(), o.tokens()});
        }
      }
      Service provider = Service.of(atProvider, from, sendingEndMs);
      Service clients = Service.of(atClients, from, sendingEndMs);
      md.append(String.format(Locale.ROOT, "%nServed while all three were backlogged (from %.1f s "
          + "to the end of sending at %.1f s; all three had a call outstanding in %.1f %% of the "
          + "%d samples every %d ms): %,d tokens accepted by the provider (%,d in the answers the "
          + "clients received in that time).%n%n", from / 1000.0, sendingEndMs / 1000.0,
          samples == 0 ? 0 : 100.0 * allBacklogged / samples, samples, SAMPLE_MS, provider.sum(),
          clients.sum()));
      md.append("| Tenant | Tokens the provider accepted | Share | Fair | Off fair | Share of the "
          + "answers received |\n|---|---|---|---|---|---|\n");
      for (int t = 0; t < tenants.size(); t++) {
        double share = provider.share(t);
        double off = 100.0 * (share - 1.0 / 3) / (1.0 / 3);
        if (t < 2) {
          ok &= Math.abs(off) <= 10.0;
        }
        md.append(String.format(Locale.ROOT, "| %s | %,d | %.4f | 0.3333 | %+.1f %% | %.4f |%n",
            tenants.get(t).name(), provider.served()[t], share, off, clients.share(t)));
      }
      ok &= provider.maxExcess() <= CALL_TOKENS;
      md.append(String.format(Locale.ROOT, "%nThe flooder's largest excess over its share of the "
          + "tokens the provider accepted since the window began: %.0f tokens (at %.1f s; one call "
          + "is %d); over any stretch of the window: %.0f tokens. Counted by the answers its "
          + "clients received instead: %.0f since the window began, %.0f over any stretch.%n",
          provider.maxExcess(), provider.maxExcessAt() / 1000.0, CALL_TOKENS,
          provider.maxStretch(), clients.maxExcess(), clients.maxStretch()));
      md.append("\nThe order in which the provider accepted the calls from the window's start "
          + "(a, b: the quiet tenants; F: the flooder):\n\n```\n")
          .append(provider.sequence()).append("\n```\n");
    }
    String targets = "provider 429s <= 1 %, capacity used >= 90 %, quiet shares within 10 % of "
        + "fair, flooder within one call of its share"
        + (lowered >= 0 ? "; after the provider lowered its limits, at most one 429 per instance "
        + "and its lower limits held from one minute after" : "");
    md.append(ok ? "\nResult: all targets met (" + targets + ").\n"
        : "\nResult: a target was missed (" + targets + ").\n");
    return md.toString();
  }

  /**
   * Reports how the gateways followed the provider's lower limits: the provider's 429s from the
   * change on, per instance, and the most calls and tokens it accepted in any sliding minute from
   * one minute after the change (one reset interval) to the end of sending. Returns whether each
   * instance had at most one such 429 and the provider stayed within its lower limits from then.
   */
  private boolean lowered(StringBuilder md, List<Outcome> all, SlidingMinuteProvider.Counts counts,
      long providerStartMs, long providerEndMs, long lowered) {
    long loweredRunMs = lowered - providerStartMs;
    long[] perInstance = new long[2];
    for (Outcome o : all) {
      if (o.providerRefusal() && o.endMs() >= loweredRunMs) {
        perInstance[o.instance()]++;
      }
    }
    long refusals = counts.refusals().stream().filter(r -> r[0] >= lowered).count();
    long firstAnswer = -1;
    for (long[] r : counts.refusals()) {
      if (r[0] >= lowered) {
        firstAnswer = r[0];
        break;
      }
    }
    for (long[] c : counts.accepted()) {
      if (c[0] >= lowered && (firstAnswer < 0 || c[0] < firstAnswer)) {
        firstAnswer = c[0];
        break;
      }
    }
    long from = lowered + 60_000;
    long mostCalls = 0;
    long mostTokens = 0;
    List<long[]> accepted = counts.accepted().stream()
        .filter(c -> c[0] >= from && c[0] <= providerEndMs).toList();
    for (int i = 0; i < accepted.size(); i++) {
      long calls = 0;
      long tokens = 0;
      for (int j = i; j < accepted.size() && accepted.get(j)[0] < accepted.get(i)[0] + 60_000; j++) {
        calls++;
        tokens += accepted.get(j)[1];
      }
      mostCalls = Math.max(mostCalls, calls);
      mostTokens = Math.max(mostTokens, tokens);
    }
    md.append(String.format(Locale.ROOT, "%nThe provider lowered its limits to %d requests and "
        + "%,d tokens a minute at %.1f s of sending (its headers say so from then on); the first "
        + "call after that reached it at %.3f s. Provider 429s from the change on: %d (passed on to clients "
        + "by instance a: %d, b: %d). From one minute after the change to the end of sending it "
        + "accepted at most %d calls and %,d tokens in any minute.%n", LOWERED_RPM, LOWERED_TPM,
        loweredRunMs / 1000.0, (firstAnswer - providerStartMs) / 1000.0, refusals, perInstance[0],
        perInstance[1], mostCalls, mostTokens));
    return perInstance[0] <= 1 && perInstance[1] <= 1 && mostCalls <= LOWERED_RPM
        && mostTokens <= LOWERED_TPM;
  }

  /**
   * The tokens served to each tenant within a window, and the flooder's (tenant 2) largest excess
   * over a third of all served: since the window began and over any stretch of it.
   *
   * @param served tokens per tenant
   * @param sum all tokens
   * @param maxExcess the flooder's largest excess since the window began
   * @param maxExcessAt when it was reached (ms of the run)
   * @param maxStretch its largest excess over any stretch of the window
   * @param sequence the tenants served, in order ({@code a}, {@code b}, {@code F})
   */
  private record Service(long[] served, long sum, double maxExcess, long maxExcessAt,
      double maxStretch, String sequence) {

    /** Measures service {@code {ms, tenant, tokens}} in {@code [from, to]}, in time order. */
    static Service of(List<long[]> points, long from, long to) {
      List<long[]> sorted = new ArrayList<>(points);
      sorted.sort((x, y) -> Long.compare(x[0], y[0]));
      long[] served = new long[3];
      long sum = 0;
      double maxExcess = 0;
      long maxExcessAt = from;
      double lowest = 0;
      double maxStretch = 0;
      StringBuilder sequence = new StringBuilder();
      for (long[] p : sorted) {
        if (p[0] < from || p[0] > to) {
          continue;
        }
        int tenant = (int) p[1];
        served[tenant] += p[2];
        sum += p[2];
        sequence.append("abF".charAt(tenant));
        double excess = served[2] - sum / 3.0;
        if (excess > maxExcess) {
          maxExcess = excess;
          maxExcessAt = p[0];
        }
        maxStretch = Math.max(maxStretch, excess - lowest);
        lowest = Math.min(lowest, excess);
      }
      return new Service(served, sum, maxExcess, maxExcessAt, maxStretch, sequence.toString());
    }

    /** The tenant's share of all tokens served (0 when none was). */
    double share(int tenant) {
      return sum == 0 ? 0 : (double) served[tenant] / sum;
    }
  }

  private static String fmt(double minutes) {
    return minutes == Math.rint(minutes) ? Long.toString((long) minutes) : Double.toString(minutes);
  }

  /** The 1-minute load average of this machine, from {@code /proc/loadavg}, or "unknown". */
  private static String loadAverage() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }
}
