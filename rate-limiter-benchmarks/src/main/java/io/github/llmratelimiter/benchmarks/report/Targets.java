package io.github.llmratelimiter.benchmarks.report;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** The targets of issue 7, each judged on figures of one run. */
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
   * @return one outcome per target, in the order
   */
  public static List<Outcome> evaluate(List<Figure> figures) {
    return evaluate(figures, List.of());
  }

  /**
   * Judges every target on the JMH {@code figures} and the load runs of one suite run.
   *
   * @param figures the JMH figures of one run
   * @param loads the load runs of the same run (pipelined Redis, HTTP)
   * @return one outcome per target, in the order
   */
  public static List<Outcome> evaluate(List<Figure> figures, List<LoadFigure> loads) {
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
    outcomes.add(http(loads));
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

  private static Outcome http(List<LoadFigure> loads) {
    String target = "HTTP: sample gateway with the limiter on vs off ≥ 0.95, p99 reported";
    Optional<LoadFigure> on = load(loads, LoadFigure.HTTP_ON);
    Optional<LoadFigure> off = load(loads, LoadFigure.HTTP_OFF);
    if (on.isEmpty() || off.isEmpty()) {
      return new Outcome(target, "not in this run", "not measured");
    }
    double r = on.get().callsPerSecond() / off.get().callsPerSecond();
    return new Outcome(target, String.format(Locale.ROOT,
        "%.2f × (%,.0f ÷ %,.0f requests/s); p99 %.2f ms on, %.2f ms off; p50 %.2f ms on, "
            + "%.2f ms off", r, on.get().callsPerSecond(), off.get().callsPerSecond(),
        on.get().p99Ms(), off.get().p99Ms(), on.get().p50Ms(), off.get().p50Ms()),
        r >= 0.95 ? "met" : "missed");
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
