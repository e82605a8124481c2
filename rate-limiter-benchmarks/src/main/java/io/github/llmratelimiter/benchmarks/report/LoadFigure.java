package io.github.llmratelimiter.benchmarks.report;

/**
 * One closed-loop load run outside JMH: a pipelined Redis run or a slot-renewal run.
 *
 * @param subject what was measured, e.g. {@code RedisStore pipelined}
 * @param scenario the case, in words
 * @param concurrency the concurrent callers
 * @param seconds the measured period
 * @param calls the calls started in the measured period
 * @param callsPerSecond their throughput
 * @param p50Ms the median latency, in milliseconds
 * @param p99Ms the 99th percentile latency, in milliseconds
 * @param serverCpuPercent the Redis server's CPU over the measured period, in % of one core (NaN
 *     when not measured)
 * @param roundTripsPerDecision commands per decision, checked to be exactly 1 (NaN when not
 *     measured)
 * @param scriptMicrosPerCall the Redis servers' time in the scripts ({@code usec} of {@code
 *     EVALSHA} and {@code EVAL} in {@code INFO commandstats}) over the measured period, per script
 *     call times the round trips per decision: per decision, in microseconds (NaN when not
 *     measured)
 */
public record LoadFigure(
    String subject,
    String scenario,
    int concurrency,
    double seconds,
    long calls,
    double callsPerSecond,
    double p50Ms,
    double p99Ms,
    double serverCpuPercent,
    double roundTripsPerDecision,
    double scriptMicrosPerCall) {

  /** Subject of the pipelined Redis run. */
  public static final String REDIS_PIPELINED = "RedisStore pipelined";
  /** Subject of the pipelined Redis run on a budget that limits model tokens. */
  public static final String REDIS_PIPELINED_MODEL_TOKENS = "RedisStore pipelined, model tokens";
  /** Subject of the pipelined Redis run on a budget with model tokens and two quotas. */
  public static final String REDIS_PIPELINED_QUOTAS = "RedisStore pipelined, quotas";
  /** Subject of the pipelined raw {@code EVALSHA} of {@code return 1}: the floor. */
  public static final String REDIS_PIPELINED_FLOOR = "Evalsha pipelined";
  /**
   * Subject of the pipelined run of a script taking a window + bucket decision's keys and
   * arguments and replying as it does, running no command.
   */
  public static final String REDIS_PIPELINED_ARGUMENTS = "Command floor, window + bucket arguments";
  /**
   * Subject of the pipelined run of a script running a window + bucket decision's commands alone,
   * with its keys, arguments and reply.
   */
  public static final String REDIS_PIPELINED_COMMANDS = "Command floor, window + bucket commands";
  /**
   * Subject of the pipelined run of the script of {@link #REDIS_PIPELINED_COMMANDS} after the
   * store's {@code lib.lua}, which every script of the store runs on every call before its own
   * part (its constants and function definitions; nothing decided).
   */
  public static final String REDIS_PIPELINED_LIBRARY =
      "Command floor, window + bucket commands after lib.lua";
  /** The same as {@link #REDIS_PIPELINED_ARGUMENTS} for a reservation with model tokens. */
  public static final String REDIS_PIPELINED_MODEL_TOKENS_ARGUMENTS =
      "Command floor, model tokens arguments";
  /** The same as {@link #REDIS_PIPELINED_COMMANDS} for a reservation with model tokens. */
  public static final String REDIS_PIPELINED_MODEL_TOKENS_COMMANDS =
      "Command floor, model tokens commands";
  /**
   * The same as {@link #REDIS_PIPELINED_LIBRARY} for a reservation with model tokens, its
   * model-token functions created too (as every such decision creates them).
   */
  public static final String REDIS_PIPELINED_MODEL_TOKENS_LIBRARY =
      "Command floor, model tokens commands after lib.lua";
  /** Subject of the pipelined Redis run of a window and a bucket, the baseline of an upstream. */
  public static final String REDIS_UPSTREAM_NONE = "RedisStore pipelined, without upstream";
  /** Subject of the pipelined Redis run of a window and a bucket with an upstream on the call. */
  public static final String REDIS_UPSTREAM = "RedisStore pipelined, with upstream";
  /** Subject of the pipelined Redis run with model tokens, the baseline of an upstream. */
  public static final String REDIS_UPSTREAM_NONE_MODEL_TOKENS =
      "RedisStore pipelined, model tokens without upstream";
  /** Subject of the pipelined Redis run with model tokens and an upstream on the call. */
  public static final String REDIS_UPSTREAM_MODEL_TOKENS =
      "RedisStore pipelined, model tokens with upstream";
  /**
   * Subject of the pipelined Redis run of a window and a bucket with an upstream and the call's
   * turn in its order, while no call waits.
   */
  public static final String REDIS_UPSTREAM_TURN = "RedisStore pipelined, with upstream and turn";
  /**
   * Subject of the pipelined Redis run with model tokens, an upstream and the call's turn in its
   * order, while no call waits.
   */
  public static final String REDIS_UPSTREAM_MODEL_TOKENS_TURN =
      "RedisStore pipelined, model tokens with upstream and turn";
  /** Subject of the pipelined Redis Cluster run of a window and a bucket, without upstream. */
  public static final String REDIS_CLUSTER_UPSTREAM_NONE =
      "RedisStore pipelined on a Cluster, without upstream";
  /** Subject of the pipelined Redis Cluster run of a window and a bucket with an upstream. */
  public static final String REDIS_CLUSTER_UPSTREAM =
      "RedisStore pipelined on a Cluster, with upstream";
  /**
   * Subject of the pipelined Redis Cluster run of a window and a bucket with an upstream and the
   * call's turn in its order, while no call waits.
   */
  public static final String REDIS_CLUSTER_UPSTREAM_TURN =
      "RedisStore pipelined on a Cluster, with upstream and turn";
  /**
   * Subject of the runs that renew the slots of calls in flight on Redis: its concurrency is the
   * calls in flight, its calls the renewal scripts, its server CPU the server's time in them.
   */
  public static final String REDIS_SLOT_RENEWALS = "RedisStore slot renewals";

  /**
   * Validates the figure.
   *
   * @throws IllegalArgumentException if the concurrency or the period is not positive
   */
  public LoadFigure {
    if (concurrency < 1) {
      throw new IllegalArgumentException("concurrency must be >= 1, but was " + concurrency);
    }
    if (!(seconds > 0)) {
      throw new IllegalArgumentException("seconds must be > 0, but was " + seconds);
    }
  }

  /**
   * A figure without the server's time in the scripts.
   *
   * @throws IllegalArgumentException if the concurrency or the period is not positive
   */
  public LoadFigure(String subject, String scenario, int concurrency, double seconds, long calls,
      double callsPerSecond, double p50Ms, double p99Ms, double serverCpuPercent,
      double roundTripsPerDecision) {
    this(subject, scenario, concurrency, seconds, calls, callsPerSecond, p50Ms, p99Ms,
        serverCpuPercent, roundTripsPerDecision, Double.NaN);
  }

  /**
   * Returns the Redis CPU time per decision.
   *
   * @return microseconds of Redis CPU per call, or NaN when not measured
   */
  public double serverCpuMicrosPerCall() {
    return serverCpuPercent / 100 * seconds * 1e6 / calls;
  }
}
