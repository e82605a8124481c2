package io.github.llmratelimiter.benchmarks.report;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The benchmark targets, each judged on figures of one run: {@link #userPaths} for the paths
 * users run (HTTP, hierarchies, Redis CPU, memory per key, scaling), {@link #evaluate} for the
 * composed check in process, on Redis and over HTTP.
 */
public final class Targets {

  /** Bytes per operation below which a path counts as allocation-free (JMH reports noise). */
  static final double ZERO_BYTES = 0.5;

  private static final String GATEWAY = "GatewayLimiter";
  private static final String SEQUENTIAL = "SEQUENTIAL";
  private static final String REDIS_STORE = "RedisStore";
  private static final List<String> DECISION_CASES = List.of(
      "allowedOneKey", "allowedTenThousandKeys", "deniedRpmOneKey", "deniedBurstOneKey",
      "deniedTenThousandKeys");
  private static final List<String> TRY_ACQUIRE_CASES = List.of(
      "tryAcquireOneKey", "tryAcquireTenThousandKeys", "tryAcquireDeniedRpmOneKey",
      "tryAcquireDeniedBurstOneKey", "tryAcquireDeniedTenThousandKeys");

  /**
   * One target and how the run did against it.
   *
   * @param target the target, in words
   * @param measured what the run measured, in words
   * @param verdict {@code met}, {@code missed} or {@code not measured}
   */
  public record Outcome(String target, String measured, String verdict) {}

  private Targets() {}

  /**
   * Judges every target on {@code figures}.
   *
   * @param figures the figures of one run
   * @return one outcome per target, in the report's order
   */
  public static List<Outcome> evaluate(List<Figure> figures) {
    return evaluate(figures, List.of());
  }

  /**
   * Judges every target on the JMH {@code figures} and the load runs of one suite run.
   *
   * @param figures the JMH figures of one run
   * @param loads the load runs of the same run (pipelined Redis, HTTP)
   * @return one outcome per target, in the report's order
   */
  public static List<Outcome> evaluate(List<Figure> figures, List<LoadFigure> loads) {
    return evaluate(figures, loads, List.of());
  }

  /**
   * Judges every target on the JMH {@code figures}, the load runs and the HTTP runs of one suite
   * run.
   *
   * @param figures the JMH figures of one run
   * @param loads the load runs of the same run (pipelined Redis)
   * @param http the HTTP runs of the same run
   * @return one outcome per target, in the report's order
   */
  public static List<Outcome> evaluate(List<Figure> figures, List<LoadFigure> loads,
      List<HttpFigure> http) {
    List<Outcome> outcomes = new ArrayList<>();
    Optional<Figure> bucket4j = find(figures, "Bucket4j", "", "allowedOneKey", 1);
    Outcome first = ratio(
        "Sequential composed check ≥ 1.5 × Bucket4j two-bandwidth bucket, 1 thread, 1 key",
        find(figures, GATEWAY, SEQUENTIAL, "allowedOneKey", 1), bucket4j, 1.5);
    Optional<Figure> floor = find(figures, "Floor", "", "mapGetLockNanoTime", 1);
    if (floor.isPresent() && bucket4j.isPresent()) {
      first = new Outcome(first.target(), first.measured() + String.format(Locale.ROOT,
          "; for scale, the floor (map get + lock + nanoTime) is %.2f × Bucket4j",
          floor.get().opsPerSecond() / bucket4j.get().opsPerSecond()), first.verdict());
    }
    outcomes.add(first);
    outcomes.add(ratio(
        "The same with tryAcquire (verdict only) ≥ 1.5 × Bucket4j, 1 thread, 1 key",
        find(figures, GATEWAY, SEQUENTIAL, "tryAcquireOneKey", 1), bucket4j, 1.5));
    Optional<Figure> naive = find(figures, "Naive", "", "allowedTenThousandKeys", 1);
    outcomes.add(ratio(
        "Sequential composed check ≥ 3 × naive baseline over 10,000 keys, 1 thread",
        find(figures, GATEWAY, SEQUENTIAL, "allowedTenThousandKeys", 1), naive, 3));
    outcomes.add(ratio(
        "The same with tryAcquire ≥ 3 × naive baseline over 10,000 keys, 1 thread",
        find(figures, GATEWAY, SEQUENTIAL, "tryAcquireTenThousandKeys", 1), naive, 3));
    outcomes.add(zeroAllocation(figures, DECISION_CASES,
        "0 B/op on the allowed and denied paths after a key's first call "
            + "(allow: a Decision per call, its fields read)"));
    outcomes.add(zeroAllocation(figures, TRY_ACQUIRE_CASES,
        "0 B/op on the allowed and denied paths after a key's first call (tryAcquire)"));
    outcomes.add(ratio(
        "2 threads on 2 different keys ≥ 1.6 × one thread (sequential)",
        find(figures, GATEWAY, SEQUENTIAL, "allowedOwnKey", 2),
        find(figures, GATEWAY, SEQUENTIAL, "allowedOneKey", 1), 1.6));
    outcomes.addAll(redis(figures, loads));
    outcomes.add(throughput(http));
    return outcomes;
  }

  private static List<Outcome> redis(List<Figure> figures, List<LoadFigure> loads) {
    List<Outcome> outcomes = new ArrayList<>();
    String target = "Redis: exactly one round trip per decision";
    Optional<LoadFigure> pipelined = load(loads, LoadFigure.REDIS_PIPELINED);
    boolean jmh = figures.stream().anyMatch(f -> f.subject().equals(REDIS_STORE));
    if (pipelined.isEmpty() && !jmh) {
      outcomes.add(new Outcome(target, "not in this run", "not measured"));
    } else {
      List<String> parts = new ArrayList<>();
      pipelined.ifPresent(p -> parts.add(String.format(Locale.ROOT,
          "%.3f commands per decision over the pipelined run (%,d decisions)",
          p.roundTripsPerDecision(), p.calls())));
      if (jmh) {
        parts.add("checked in every iteration of the RedisStore benchmarks");
      }
      boolean one = pipelined.map(p -> p.roundTripsPerDecision() == 1.0).orElse(true);
      outcomes.add(new Outcome(target, String.join("; ", parts)
          + " (commands the store's Lettuce client completed, and EVALSHA/EVAL calls in the "
          + "server's INFO commandstats, each equal to the decisions; any other count fails the run)",
          one ? "met" : "missed"));
    }
    outcomes.add(ratio("Redis: 1 thread ≥ 0.9 × raw EVALSHA `return 1` (sequential, 1 key)",
        find(figures, REDIS_STORE, "", "allowedOneKey", 1),
        find(figures, "Evalsha", "", "evalshaReturnOne", 1), 0.9));
    outcomes.add(ratio("Redis: 8 threads on one hot key ≥ 5 × Bucket4j-Lettuce",
        find(figures, REDIS_STORE, "", "allowedOneKey", 8),
        find(figures, "Bucket4jLettuce", "", "allowedOneKey", 8), 5));
    outcomes.add(pipelined.map(p -> new Outcome(
            "Redis: a pipelined run reports decisions per second and Redis CPU",
            String.format(Locale.ROOT, "%,.0f decisions/s from %d threads; Redis CPU %.0f %% of "
                + "one core, %.1f µs per decision", p.callsPerSecond(), p.concurrency(),
                p.serverCpuPercent(), p.serverCpuMicrosPerCall()), "reported"))
        .orElse(new Outcome("Redis: a pipelined run reports decisions per second and Redis CPU",
            "not in this run", "not measured")));
    return outcomes;
  }

  private static Outcome throughput(List<HttpFigure> http) {
    String target = "HTTP: sample gateway (plain call, in-memory) with the limiter on ÷ off "
        + "≥ 0.95 requests/s (median of the rounds), p99 reported";
    Optional<HttpFigure> f = http(http, HttpFigure.SERVLET, HttpFigure.MEMORY, HttpFigure.PLAIN);
    if (f.isEmpty()) {
      return new Outcome(target, "not in this run", "not measured");
    }
    HttpFigure.Spread r = f.get().throughputRatio();
    return new Outcome(target, String.format(Locale.ROOT,
        "%s (%,.0f ÷ %,.0f requests/s); p99 %.2f ms on, %.2f ms off; p50 %.2f ms on, %.2f ms off",
        spread(r, f.get().rounds().size()), f.get().onRequestsPerSecond(),
        f.get().offRequestsPerSecond(), f.get().onP99Ms(), f.get().offP99Ms(), f.get().onP50Ms(),
        f.get().offP50Ms()), r.median() >= 0.95 ? "met" : "missed");
  }

  /**
   * The target on an HTTP gateway's CPU per request: the median of the rounds' on ÷ off ratios at
   * most {@code most}.
   */
  private static Outcome cpu(List<HttpFigure> http, String stack, String call, double most) {
    String target = String.format(Locale.ROOT, "1. HTTP, %s stack, %s call, in-memory: the "
        + "gateway's CPU per request with the limiter on ÷ off ≤ %.2f (median of the rounds)",
        stack, call, most);
    Optional<HttpFigure> f = http(http, stack, HttpFigure.MEMORY, call);
    if (f.isEmpty()) {
      return new Outcome(target, "not in this run", "not measured");
    }
    HttpFigure h = f.get();
    HttpFigure.Spread cpu = h.cpuRatio();
    String measured = String.format(Locale.ROOT,
        "%s (%.0f ÷ %.0f µs per request); without the JIT compiler threads' CPU %s (they took "
            + "%.0f %% of it); requests/s on ÷ off %s; p99 %.2f ms on, %.2f ms off",
        spread(cpu, h.rounds().size()), h.onCpuMicros(), h.offCpuMicros(),
        spread(h.cpuWithoutCompilerRatio(), h.rounds().size()), h.compilerShare() * 100,
        spread(h.throughputRatio(), h.rounds().size()), h.onP99Ms(), h.offP99Ms());
    if (!h.cpuResolved()) {
      return new Outcome(target, UNRESOLVED + "; " + measured, "not measured");
    }
    return new Outcome(target, measured, cpuVerdict(cpu, most));
  }

  /** The widest spread of the rounds' CPU ratios a met target may have. */
  static final double MAX_CPU_SPREAD = 0.20;

  /**
   * The verdict of a CPU-per-request target: met when the median of the rounds is within it and
   * the rounds agree; unsettled when the median is within it but the rounds spread wider than
   * {@value #MAX_CPU_SPREAD}, or the median is below 1 (the limiter on costing less than off is
   * the machine's noise, not the limiter's cost); missed otherwise.
   */
  static String cpuVerdict(HttpFigure.Spread cpu, double most) {
    if (cpu.median() > most) {
      return "missed";
    }
    if (cpu.median() < 1.0 || cpu.max() - cpu.min() > MAX_CPU_SPREAD) {
      return String.format(Locale.ROOT, "unsettled (the rounds spread from %.2f to %.2f: the "
          + "machine's noise, not a measure of the limiter)", cpu.min(), cpu.max());
    }
    return "met";
  }

  /** Why a figure's CPU ratios do not count. */
  static final String UNRESOLVED = String.format(Locale.ROOT, "a slice measured less than %.1f s "
      + "of the gateway's CPU, below the resolution of the OS's accounting",
      HttpFigure.MIN_CPU_SECONDS);

  /** Formats a spread of ratios: {@code 1.03 × (1.01 to 1.06 over 3 rounds)}. */
  static String spread(HttpFigure.Spread s, int rounds) {
    return String.format(Locale.ROOT, "%.2f × (%.2f to %.2f over %d rounds)", s.median(), s.min(),
        s.max(), rounds);
  }

  static Optional<HttpFigure> http(List<HttpFigure> http, String stack, String store,
      String call) {
    return http.stream().filter(f -> f.stack().equals(stack) && f.store().equals(store)
        && f.call().equals(call)).findFirst();
  }

  private static final String HIERARCHY = "HierarchicalLimiter";
  /** The most CPU per request the servlet gateway may spend with the limiter on, times off's. */
  static final double SERVLET_CPU = 1.05;
  /** The most CPU per request the reactive gateway may spend with the limiter on, times off's. */
  static final double REACTIVE_CPU = 1.10;

  /**
   * Judges the targets on the paths users run on the figures of one run.
   *
   * @param figures the JMH figures
   * @param loads the load runs (pipelined Redis, HTTP on both stacks)
   * @param memory the heap retained per tracked key, per subject
   * @param scaling the rounds of 1 and 2 threads
   * @return one outcome per target, in the report's order
   */
  public static List<Outcome> userPaths(List<Figure> figures, List<LoadFigure> loads,
      List<MemoryFigure> memory, List<ScalingRound> scaling) {
    return userPaths(figures, loads, memory, scaling, List.of());
  }

  /**
   * Judges the targets on the paths users run on the figures of one run.
   *
   * @param figures the JMH figures
   * @param loads the load runs (pipelined Redis)
   * @param memory the heap retained per tracked key, per subject
   * @param scaling the rounds of 1 and 2 threads
   * @param http the HTTP runs of both stacks
   * @return one outcome per target, in the report's order
   */
  public static List<Outcome> userPaths(List<Figure> figures, List<LoadFigure> loads,
      List<MemoryFigure> memory, List<ScalingRound> scaling, List<HttpFigure> http) {
    List<Outcome> outcomes = new ArrayList<>();
    for (String call : List.of(HttpFigure.PLAIN, HttpFigure.STREAMED)) {
      outcomes.add(cpu(http, HttpFigure.SERVLET, call, SERVLET_CPU));
    }
    for (String call : List.of(HttpFigure.PLAIN, HttpFigure.STREAMED)) {
      outcomes.add(cpu(http, HttpFigure.REACTIVE, call, REACTIVE_CPU));
    }
    Optional<Figure> bucket4j = find(figures, "Bucket4j", "", "allowedOneKey", 1);
    outcomes.add(withFloor(withOther(ratio("2. Two-level hierarchy (per key, then per key and "
            + "model), allow ≥ 1.0 × Bucket4j two-bandwidth bucket, 1 thread, 1 key (sequential)",
        find(figures, HIERARCHY, SEQUENTIAL, "allowedTwoLevelsOneKey", 1), bucket4j, 1.0),
        figures, "allowedTwoLevelsOneKey", bucket4j), figures, "tryAcquireTwoLevelsOneKey",
        "twoMapGetsTwoLocksNanoTime", bucket4j));
    outcomes.add(withFloor(withOther(ratio("2. Three-level hierarchy, allow ≥ 0.8 × Bucket4j, "
            + "1 thread, 1 key (sequential)",
        find(figures, HIERARCHY, SEQUENTIAL, "allowedOneKey", 1), bucket4j, 0.8),
        figures, "allowedOneKey", bucket4j), figures, "tryAcquireOneKey", "", bucket4j));
    outcomes.add(bytes(figures, HIERARCHY, List.of("allowedTwoLevelsOneKey", "allowedOneKey",
            "allowedTenThousandKeys", "deniedOneKey", "deniedTenThousandKeys"), 48,
        "2. Hierarchy allow ≤ 48 B/op (both modes, 2 and 3 levels, allowed and denied)"));
    outcomes.add(bytes(figures, HIERARCHY, List.of("tryAcquireTwoLevelsOneKey", "tryAcquireOneKey",
            "tryAcquireDeniedOneKey"), 0,
        "2. Hierarchy tryAcquire (verdict only) 0 B/op (both modes, 2 and 3 levels)"));
    outcomes.add(composed(figures, bucket4j));
    outcomes.add(redisCpu(loads, LoadFigure.REDIS_PIPELINED, LoadFigure.REDIS_PIPELINED_ARGUMENTS,
        LoadFigure.REDIS_PIPELINED_COMMANDS, LoadFigure.REDIS_PIPELINED_LIBRARY, 1.5,
        "4. Redis CPU per decision, pipelined, window + "
            + "bucket ≤ 1.5 × the floor (raw EVALSHA `return 1` pipelined alike, same run)"));
    outcomes.add(redisCpu(loads, LoadFigure.REDIS_PIPELINED_MODEL_TOKENS,
        LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_ARGUMENTS,
        LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_COMMANDS,
        LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_LIBRARY, 2.5, "4. Redis CPU per decision, "
            + "pipelined, window + bucket + model tokens ≤ 2.5 × the floor (same run)"));
    Outcome trips = redis(figures, loads).get(0);
    outcomes.add(new Outcome("4. " + trips.target() + " (every pipelined run is checked alike)",
        trips.measured(), trips.verdict()));
    outcomes.add(upstreamTrips(loads));
    outcomes.add(memory(memory, "window-bucket",
        "5. Heap per tracked key, 1,000,000 keys, window + bucket ≤ Bucket4j's"));
    outcomes.add(memory(memory, "window-bucket-model-tokens",
        "5. Heap per tracked key, 1,000,000 keys, window + bucket + model tokens ≤ Bucket4j's"));
    outcomes.add(scaling(scaling));
    return outcomes;
  }

  /** Adds the reserve-then-commit ratio of the same case to a sequential outcome. */
  /**
   * A standalone Redis decides a call and its upstream in one round trip, nobody waiting, with the
   * call's turn in the upstream's order too.
   */
  private static Outcome upstreamTrips(List<LoadFigure> loads) {
    String target = "4. Redis with an upstream on the call, standalone: exactly one round trip "
        + "per decision (nobody waiting), with the call's turn in the upstream's order too";
    List<String> parts = new ArrayList<>();
    boolean one = true;
    for (String subject : List.of(LoadFigure.REDIS_UPSTREAM, LoadFigure.REDIS_UPSTREAM_TURN,
        LoadFigure.REDIS_UPSTREAM_MODEL_TOKENS, LoadFigure.REDIS_UPSTREAM_MODEL_TOKENS_TURN)) {
      Optional<LoadFigure> f = load(loads, subject);
      if (f.isPresent()) {
        String scenario = f.get().scenario();
        String policy = scenario.substring(0, scenario.indexOf(", upstream"));
        parts.add(String.format(Locale.ROOT, "%.3f commands per decision, %s (%,d decisions)",
            f.get().roundTripsPerDecision(), scenario.contains("(turn)")
                ? policy + ", with the turn" : policy, f.get().calls()));
        one &= f.get().roundTripsPerDecision() == 1.0;
      }
    }
    if (parts.isEmpty()) {
      return new Outcome(target, "not in this run", "not measured");
    }
    return new Outcome(target, String.join("; ", parts), one ? "met" : "missed");
  }

  private static Outcome withOther(
      Outcome o, List<Figure> figures, String method, Optional<Figure> base) {
    Optional<Figure> other = find(figures, HIERARCHY, "RESERVE_COMMIT", method, 1);
    if (other.isEmpty() || base.isEmpty()) {
      return o;
    }
    return new Outcome(o.target(), o.measured() + String.format(Locale.ROOT,
        "; reserve-then-commit %.2f ×", other.get().opsPerSecond() / base.get().opsPerSecond()),
        o.verdict());
  }

  /**
   * Adds the verdict-only path's ratio, and the floor's (a {@code Floor} method, if any) to a
   * hierarchy's outcome.
   */
  private static Outcome withFloor(Outcome o, List<Figure> figures, String tryAcquire,
      String floorMethod, Optional<Figure> base) {
    if (base.isEmpty()) {
      return o;
    }
    List<String> more = new ArrayList<>();
    find(figures, HIERARCHY, SEQUENTIAL, tryAcquire, 1).ifPresent(t -> more.add(String.format(
        Locale.ROOT, "tryAcquire %.2f ×", t.opsPerSecond() / base.get().opsPerSecond())));
    find(figures, "Floor", "", floorMethod, 1).ifPresent(f -> more.add(String.format(Locale.ROOT,
        "the floor of two locked levels on the system clock (2 map gets + 2 locks + 1 nanoTime, no "
            + "limiter logic) %.2f ×", f.opsPerSecond() / base.get().opsPerSecond())));
    return more.isEmpty() ? o
        : new Outcome(o.target(), o.measured() + "; " + String.join("; ", more), o.verdict());
  }

  private static Outcome bytes(List<Figure> figures, String subject, List<String> methods,
      double most, String target) {
    List<String> parts = new ArrayList<>();
    boolean within = true;
    int missing = 0;
    for (String mode : List.of(SEQUENTIAL, "RESERVE_COMMIT")) {
      for (String method : methods) {
        Optional<Figure> f = find(figures, subject, mode, method, 1);
        if (f.isEmpty() || Double.isNaN(f.get().bytesPerOp())) {
          missing++;
          continue;
        }
        parts.add((mode.equals(SEQUENTIAL) ? "seq. " : "r-c ") + f.get().caseLabel() + ": "
            + MarkdownReport.bytes(f.get().bytesPerOp()));
        within &= f.get().bytesPerOp() < most + ZERO_BYTES;
      }
    }
    if (parts.isEmpty()) {
      return new Outcome(target, "not in this run (needs -prof gc)", "not measured");
    }
    return new Outcome(target, String.join("; ", parts),
        !within ? "missed" : missing == 0 ? "met" : "not measured");
  }

  private static Outcome composed(List<Figure> figures, Optional<Figure> bucket4j) {
    Outcome o = ratio("3. Composed check allow ≥ 1.5 × Bucket4j two-bandwidth bucket (the goal), "
            + "1 thread, 1 key (sequential)",
        find(figures, GATEWAY, SEQUENTIAL, "allowedOneKey", 1), bucket4j, 1.5);
    if (bucket4j.isEmpty()) {
      return o;
    }
    List<String> more = new ArrayList<>();
    find(figures, GATEWAY, SEQUENTIAL, "tryAcquireOneKey", 1).ifPresent(t -> more.add(
        String.format(Locale.ROOT, "tryAcquire (no Decision) %.2f ×",
            t.opsPerSecond() / bucket4j.get().opsPerSecond())));
    find(figures, "Floor", "", "mapGetLockNanoTime", 1).ifPresent(f -> more.add(
        String.format(Locale.ROOT, "the floor of any per-key locked limiter on the system clock "
            + "(map get + lock + nanoTime, no limiter logic) %.2f ×",
            f.opsPerSecond() / bucket4j.get().opsPerSecond())));
    return more.isEmpty() ? o
        : new Outcome(o.target(), o.measured() + "; " + String.join("; ", more), o.verdict());
  }

  private static Outcome redisCpu(List<LoadFigure> loads, String subject, String arguments,
      String commands, String library, double most, String target) {
    Optional<LoadFigure> run = load(loads, subject);
    Optional<LoadFigure> floor = load(loads, LoadFigure.REDIS_PIPELINED_FLOOR);
    if (run.isEmpty() || floor.isEmpty()) {
      return new Outcome(target, "not in this run", "not measured");
    }
    LoadFigure p = run.get();
    double base = floor.get().serverCpuMicrosPerCall();
    double ratio = p.serverCpuMicrosPerCall() / base;
    StringBuilder measured = new StringBuilder(String.format(Locale.ROOT,
        "%.2f × (%.1f µs ÷ %.1f µs; %,.0f decisions/s, Redis at %.0f %% of one core, %.3f round "
            + "trips per decision)", ratio, p.serverCpuMicrosPerCall(), base, p.callsPerSecond(),
        p.serverCpuPercent(), p.roundTripsPerDecision()));
    load(loads, arguments).ifPresent(a -> measured.append(String.format(Locale.ROOT,
        "; the same call's keys, arguments and reply without a command %.2f × (%.1f µs)",
        a.serverCpuMicrosPerCall() / base, a.serverCpuMicrosPerCall())));
    Optional<LoadFigure> own = load(loads, commands);
    own.ifPresent(c -> measured.append(String.format(Locale.ROOT,
        "; with its commands alone %.2f × (%.1f µs); the script's own work above them %.1f µs",
        c.serverCpuMicrosPerCall() / base, c.serverCpuMicrosPerCall(),
        p.serverCpuMicrosPerCall() - c.serverCpuMicrosPerCall())));
    load(loads, library).ifPresent(l -> measured.append(String.format(Locale.ROOT,
        "; its commands after the store's lib.lua (its definitions, run on every call%s) %.2f × "
            + "(%.1f µs)", library.contains("model tokens")
                ? ", and its model-token functions, created on every call that limits them" : "",
            l.serverCpuMicrosPerCall() / base, l.serverCpuMicrosPerCall())));
    String verdict = ratio <= most ? "met" : own.isPresent()
        && own.get().serverCpuMicrosPerCall() / base > most
            ? "missed (its commands alone are above it)" : "missed";
    return new Outcome(target, measured.toString(), verdict);
  }

  private static Outcome memory(List<MemoryFigure> memory, String subject, String target) {
    Optional<MemoryFigure> ours = memory.stream().filter(m -> m.subject().equals(subject)).findFirst();
    List<MemoryFigure> peers =
        memory.stream().filter(m -> m.subject().startsWith("bucket4j")).toList();
    if (ours.isEmpty() || peers.isEmpty()) {
      return new Outcome(target, "not in this run", "not measured");
    }
    List<String> parts = new ArrayList<>();
    parts.add(String.format(Locale.ROOT, "%.0f B per key", ours.get().bytesPerKey()));
    boolean within = true;
    for (MemoryFigure p : peers) {
      parts.add(String.format(Locale.ROOT, "%s %.0f B (%.2f ×)", p.label(), p.bytesPerKey(),
          ours.get().bytesPerKey() / p.bytesPerKey()));
      within &= ours.get().bytesPerKey() <= p.bytesPerKey();
    }
    return new Outcome(target, String.join("; ", parts) + " (key strings included)",
        within ? "met" : "missed");
  }

  private static Outcome scaling(List<ScalingRound> rounds) {
    String target = "6. 2 threads on 2 different keys ≥ 1.6 × one thread (GatewayLimiter, "
        + "sequential; rounds alternating which count runs first; verdict on the median)";
    if (rounds.isEmpty()) {
      return new Outcome(target, "not in this run", "not measured");
    }
    double[] ratios = rounds.stream().mapToDouble(ScalingRound::ratio).sorted().toArray();
    int n = ratios.length;
    double median = n % 2 == 1 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
    List<String> each = new ArrayList<>();
    for (ScalingRound r : rounds) {
      each.add(String.format(Locale.ROOT, "%.2f", r.ratio()));
    }
    return new Outcome(target, String.format(Locale.ROOT,
        "median %.2f ×, spread %.2f to %.2f over %d rounds (%s)", median, ratios[0],
        ratios[n - 1], n, String.join(", ", each)), median >= 1.6 ? "met" : "missed");
  }

  static Optional<LoadFigure> load(List<LoadFigure> loads, String subject) {
    return loads.stream().filter(l -> l.subject().equals(subject)).findFirst();
  }

  private static Outcome ratio(
      String target, Optional<Figure> subject, Optional<Figure> base, double goal) {
    if (subject.isEmpty() || base.isEmpty()) {
      return new Outcome(target, "not in this run", "not measured");
    }
    double r = subject.get().opsPerSecond() / base.get().opsPerSecond();
    String measured = String.format(Locale.ROOT, "%.2f × (%s ÷ %s ops/s)", r,
        MarkdownReport.ops(subject.get().opsPerSecond()), MarkdownReport.ops(base.get().opsPerSecond()));
    return new Outcome(target, measured, r >= goal ? "met" : "missed");
  }

  private static Outcome zeroAllocation(List<Figure> figures, List<String> cases, String target) {
    List<String> parts = new ArrayList<>();
    boolean all = true;
    boolean zero = true;
    for (String method : cases) {
      Optional<Figure> f = find(figures, GATEWAY, SEQUENTIAL, method, 1);
      if (f.isEmpty() || Double.isNaN(f.get().bytesPerOp())) {
        all = false;
        continue;
      }
      parts.add(f.get().caseLabel() + ": " + MarkdownReport.bytes(f.get().bytesPerOp()));
      zero &= f.get().bytesPerOp() < ZERO_BYTES;
    }
    if (parts.isEmpty()) {
      return new Outcome(target, "not in this run (needs -prof gc)", "not measured");
    }
    String verdict = !zero ? "missed" : all ? "met" : "not measured";
    return new Outcome(target, String.join("; ", parts), verdict);
  }

  static Optional<Figure> find(
      List<Figure> figures, String subject, String mode, String method, int threads) {
    return figures.stream()
        .filter(f -> f.subject().equals(subject) && f.mode().equals(mode)
            && f.method().equals(method) && f.threads() == threads)
        .findFirst();
  }
}
