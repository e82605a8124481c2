package io.github.llmratelimiter.benchmarks.report;

import java.util.Arrays;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * One HTTP comparison: a gateway stack on one store serving one kind of call, with the limiter off
 * and on, measured in alternating rounds (off then on, on then off, ...).
 *
 * @param stack the stack, {@link #SERVLET} or {@link #REACTIVE}
 * @param store the limiter's store, {@link #MEMORY} or {@link #REDIS}
 * @param call the call, {@link #PLAIN}, {@link #STREAMED} or {@link #TOKENS}
 * @param rounds the measured rounds, at least one
 * @param offP50Ms the median latency with the limiter off over every round, in milliseconds
 * @param offP99Ms the 99th percentile with the limiter off
 * @param onP50Ms the median latency with the limiter on
 * @param onP99Ms the 99th percentile with the limiter on
 * @param decisionMicros the mean time the on gateway's store took to decide, from its {@code
 *     ratelimiter.decision.latency} timer over the measured slices, in microseconds
 * @param redisScriptsPerRequest Redis scripts ({@code EVALSHA}, {@code EVAL}: one round trip each)
 *     per request of the on gateway (NaN off Redis)
 * @param redisMicrosPerRequest Redis's time in those scripts per request, {@code usec} of {@code
 *     INFO commandstats} (NaN off Redis)
 * @param retried requests sent again on a fresh connection after theirs closed under them
 * @param hung requests sent again after the JDK client hung on them (no complete answer within
 *     their timeout and grace) while their gateway served no request as old
 */
public record HttpFigure(
    String stack,
    String store,
    String call,
    List<Round> rounds,
    double offP50Ms,
    double offP99Ms,
    double onP50Ms,
    double onP99Ms,
    double decisionMicros,
    double redisScriptsPerRequest,
    double redisMicrosPerRequest,
    long retried,
    long hung) {

  /** The servlet stack: the sample gateway (Spring MVC on Tomcat). */
  public static final String SERVLET = "servlet";
  /** The reactive stack: the WebFlux benchmark gateway (Netty). */
  public static final String REACTIVE = "reactive";
  /** The in-memory store. */
  public static final String MEMORY = "in-memory";
  /** The Redis store. */
  public static final String REDIS = "Redis";
  /** A plain JSON call. */
  public static final String PLAIN = "plain";
  /** A streamed call, its usage in the last events. */
  public static final String STREAMED = "streamed";
  /** A plain call on a policy with a model-token limit: its usage reconciled. */
  public static final String TOKENS = "model tokens";

  /**
   * The least CPU time of the gateway a slice must measure for its CPU per request to count: ten
   * ticks of the OS's accounting (10 ms each on Linux).
   */
  public static final double MIN_CPU_SECONDS = 0.1;

  /**
   * Validates the figure.
   *
   * @throws IllegalArgumentException if there is no round
   */
  public HttpFigure {
    rounds = List.copyOf(rounds);
    if (rounds.isEmpty()) {
      throw new IllegalArgumentException("rounds must not be empty, but was " + rounds);
    }
  }

  /**
   * One measured slice of one gateway.
   *
   * @param requests the requests started in the slice
   * @param seconds the slice's length
   * @param cpuSeconds the gateway process's CPU time in the slice (user and system)
   * @param compilerCpuSeconds the part of it its JIT compiler threads used (0 when not read): work
   *     a process does until its code is compiled, not per request
   */
  public record Slice(long requests, double seconds, double cpuSeconds, double compilerCpuSeconds) {

    /**
     * Validates the slice.
     *
     * @throws IllegalArgumentException if there is no request or the length is not positive
     */
    public Slice {
      if (requests < 1) {
        throw new IllegalArgumentException("requests must be >= 1, but was " + requests);
      }
      if (!(seconds > 0)) {
        throw new IllegalArgumentException("seconds must be > 0, but was " + seconds);
      }
    }

    /**
     * A slice whose compiler threads were not read.
     *
     * @throws IllegalArgumentException if there is no request or the length is not positive
     */
    public Slice(long requests, double seconds, double cpuSeconds) {
      this(requests, seconds, cpuSeconds, 0);
    }

    /**
     * Returns the throughput.
     *
     * @return requests per second
     */
    public double requestsPerSecond() {
      return requests / seconds;
    }

    /**
     * Returns the gateway's CPU time per request.
     *
     * @return microseconds per request
     */
    public double cpuMicrosPerRequest() {
      return cpuSeconds * 1e6 / requests;
    }

    /**
     * Returns the gateway's CPU time per request less its JIT compiler threads'.
     *
     * @return microseconds per request
     */
    public double cpuWithoutCompilerMicrosPerRequest() {
      return (cpuSeconds - compilerCpuSeconds) * 1e6 / requests;
    }
  }

  /**
   * One round: a slice with the limiter off and one with it on, back to back.
   *
   * @param onFirst whether the limiter-on slice ran first
   * @param off the slice with the limiter off
   * @param on the slice with the limiter on
   */
  public record Round(boolean onFirst, Slice off, Slice on) {

    /**
     * Returns the round's throughput on ÷ off.
     *
     * @return the ratio
     */
    public double throughputRatio() {
      return on.requestsPerSecond() / off.requestsPerSecond();
    }

    /**
     * Returns the round's CPU per request on ÷ off.
     *
     * @return the ratio
     */
    public double cpuRatio() {
      return on.cpuMicrosPerRequest() / off.cpuMicrosPerRequest();
    }

    /**
     * Returns the round's CPU per request on ÷ off, each less its JIT compiler threads' CPU.
     *
     * @return the ratio
     */
    public double cpuWithoutCompilerRatio() {
      return on.cpuWithoutCompilerMicrosPerRequest() / off.cpuWithoutCompilerMicrosPerRequest();
    }
  }

  /**
   * The median and the range of per-round ratios.
   *
   * @param median the median (of an even count, the mean of the middle two)
   * @param min the smallest
   * @param max the largest
   */
  public record Spread(double median, double min, double max) {

    /**
     * Summarises values.
     *
     * @param values at least one value
     * @return their median and range
     * @throws IllegalArgumentException if there is none
     */
    public static Spread of(double... values) {
      if (values.length == 0) {
        throw new IllegalArgumentException("values must not be empty, but had length 0");
      }
      double[] v = values.clone();
      Arrays.sort(v);
      int n = v.length;
      double median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
      return new Spread(median, v[0], v[n - 1]);
    }

    /** Returns {@code 1.03 × (1.01 to 1.06)}: the median, then the range. */
    @Override
    public String toString() {
      return String.format(java.util.Locale.ROOT, "%.2f × (%.2f to %.2f)", median, min, max);
    }
  }

  /**
   * Returns the per-round throughput ratios on ÷ off.
   *
   * @return their median and range
   */
  public Spread throughputRatio() {
    return spread(Round::throughputRatio);
  }

  /**
   * Returns the per-round CPU-per-request ratios on ÷ off.
   *
   * @return their median and range
   */
  public Spread cpuRatio() {
    return spread(Round::cpuRatio);
  }

  /**
   * Returns the per-round CPU-per-request ratios on ÷ off, each side less its JIT compiler
   * threads' CPU.
   *
   * @return their median and range
   */
  public Spread cpuWithoutCompilerRatio() {
    return spread(Round::cpuWithoutCompilerRatio);
  }

  /**
   * Returns the JIT compiler threads' share of the gateways' CPU over every slice, off and on.
   *
   * @return a fraction from 0 to 1
   */
  public double compilerShare() {
    Slice off = total(Round::off);
    Slice on = total(Round::on);
    double cpu = off.cpuSeconds() + on.cpuSeconds();
    return cpu > 0 ? (off.compilerCpuSeconds() + on.compilerCpuSeconds()) / cpu : 0;
  }

  /**
   * Returns whether every slice measured at least {@link #MIN_CPU_SECONDS} of the gateway's CPU,
   * so that the CPU ratios are above the resolution of the OS's accounting.
   *
   * @return whether the CPU figures count
   */
  public boolean cpuResolved() {
    return rounds.stream().allMatch(r -> r.off().cpuSeconds() >= MIN_CPU_SECONDS
        && r.on().cpuSeconds() >= MIN_CPU_SECONDS);
  }

  private Spread spread(ToDoubleFunction<Round> ratio) {
    return Spread.of(rounds.stream().mapToDouble(ratio).toArray());
  }

  /**
   * Returns the throughput with the limiter off over every round.
   *
   * @return requests per second
   */
  public double offRequestsPerSecond() {
    return total(Round::off).requestsPerSecond();
  }

  /**
   * Returns the throughput with the limiter on over every round.
   *
   * @return requests per second
   */
  public double onRequestsPerSecond() {
    return total(Round::on).requestsPerSecond();
  }

  /**
   * Returns the CPU per request with the limiter off over every round.
   *
   * @return microseconds per request
   */
  public double offCpuMicros() {
    return total(Round::off).cpuMicrosPerRequest();
  }

  /**
   * Returns the CPU per request with the limiter on over every round.
   *
   * @return microseconds per request
   */
  public double onCpuMicros() {
    return total(Round::on).cpuMicrosPerRequest();
  }

  private Slice total(java.util.function.Function<Round, Slice> side) {
    long requests = 0;
    double seconds = 0;
    double cpu = 0;
    double compiler = 0;
    for (Round r : rounds) {
      Slice s = side.apply(r);
      requests += s.requests();
      seconds += s.seconds();
      cpu += s.cpuSeconds();
      compiler += s.compilerCpuSeconds();
    }
    return new Slice(requests, seconds, cpu, compiler);
  }
}
