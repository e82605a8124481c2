package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.benchmarks.load.ClosedLoopLoad;
import io.github.llmratelimiter.benchmarks.report.LoadFigure;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * Many decisions in flight on one connection: {@value #CONCURRENCY} threads call the limiter on
 * Redis over 1,000 keys, so that Lettuce pipelines their {@code EVALSHA}s; reports decisions per
 * second, latency, and Redis's CPU ({@code INFO cpu}, system + user) and its time in the scripts
 * ({@code INFO commandstats}) over the measured period, and checks exactly one round trip per decision over the whole run. Four cases, each on a fresh
 * {@code redis-server}: a window and a bucket ({@code allow}); the same with model tokens ({@code
 * reserve} of an estimate, the decision of a call that reports usage; its reconciliation after the
 * call is a second script, not counted here); the same with two quotas (a daily cost quota in
 * Europe/Berlin and a monthly model-token quota, with thresholds); and the floor, a raw {@code EVALSHA} of {@code
 * return 1} from as many threads on one connection.
 */
public final class PipelinedRun {

  /** The threads calling the store. */
  public static final int CONCURRENCY = 32;

  private PipelinedRun() {}

  /** One decision of a case on the limiter. */
  @FunctionalInterface
  interface Decide {
    void decide(RedisLimiter redis, String key);
  }

  /** What a case does on its limiter outside the counted calls. */
  interface Around {

    /** Nothing before or after. */
    Around NONE = new Around() {};

    /** Runs before the round trips are counted. */
    default void before(RedisLimiter redis) throws InterruptedException {}

    /** Checks the limiter after the round trips were checked, given the decisions made. */
    default void after(RedisLimiter redis, long decisions) {}
  }

  /**
   * Runs the four cases, one after the other.
   *
   * @param warmup each case's warm-up
   * @param measure each case's measured period
   * @return the figures: window and bucket, model tokens, quotas, raw {@code EVALSHA}
   * @throws InterruptedException if interrupted
   * @throws IllegalStateException if a decision was a deny, Redis failed, or a decision took other
   *     than one round trip
   */
  public static List<LoadFigure> run(Duration warmup, Duration measure)
      throws InterruptedException {
    LoadFigure windowBucket = run(warmup, measure, LoadFigure.REDIS_PIPELINED, "window + bucket",
        RedisLimiter::allowed);
    LoadFigure modelTokens = run(warmup, measure, LoadFigure.REDIS_PIPELINED_MODEL_TOKENS,
        "window + bucket + model tokens (reserve)", RedisLimiter::reserved);
    LoadFigure quotas = run(warmup, measure, LoadFigure.REDIS_PIPELINED_QUOTAS,
        "window + bucket + model tokens + two quotas (reserve)", RedisLimiter::reservedWithQuotas);
    return List.of(windowBucket, modelTokens, quotas, evalsha(warmup, measure),
        floor(warmup, measure, LoadFigure.REDIS_PIPELINED_ARGUMENTS,
            "window + bucket: its keys, arguments and reply, no command",
            CommandFloor.windowAndBucket(RedisStoreBenchmark.KEY_COUNT), false, List.of()),
        floor(warmup, measure, LoadFigure.REDIS_PIPELINED_COMMANDS,
            "window + bucket: its commands alone",
            CommandFloor.windowAndBucket(RedisStoreBenchmark.KEY_COUNT), true,
            List.of("time", "getrange", "set")),
        floor(warmup, measure, LoadFigure.REDIS_PIPELINED_LIBRARY,
            "window + bucket: its commands after lib.lua's definitions",
            CommandFloor.windowAndBucketAfterLibrary(RedisStoreBenchmark.KEY_COUNT), true,
            List.of("time", "getrange", "set")),
        floor(warmup, measure, LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_ARGUMENTS,
            "window + bucket + model tokens: its keys, arguments and reply, no command",
            CommandFloor.modelTokens(RedisStoreBenchmark.KEY_COUNT), false, List.of()),
        floor(warmup, measure, LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_COMMANDS,
            "window + bucket + model tokens: its commands alone",
            CommandFloor.modelTokens(RedisStoreBenchmark.KEY_COUNT), true,
            List.of("time", "incr", "getrange", "set")),
        floor(warmup, measure, LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_LIBRARY,
            "window + bucket + model tokens: its commands after lib.lua's definitions and its "
                + "model-token functions",
            CommandFloor.modelTokensAfterLibrary(RedisStoreBenchmark.KEY_COUNT), true,
            List.of("time", "incr", "getrange", "set")));
  }

  private static String[] keys() {
    String[] keys = new String[RedisStoreBenchmark.KEY_COUNT];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = "tenant-" + i;
    }
    return keys;
  }

  /**
   * Returns the call of each of {@value #CONCURRENCY} workers: the next of 1,000 keys, each worker
   * walking them from its own share, counted in {@code decisions}.
   */
  static ClosedLoopLoad.Call overKeys(LongAdder decisions, Consumer<String> decide) {
    String[] keys = keys();
    int[] next = new int[CONCURRENCY * 16]; // one slot per worker, 16 apart (no false sharing)
    return worker -> {
      int slot = worker * 16;
      int i = next[slot];
      next[slot] = i + 1 == keys.length ? 0 : i + 1;
      decisions.increment();
      decide.accept(keys[(i + worker * keys.length / CONCURRENCY) % keys.length]);
    };
  }

  /**
   * Runs one case on a fresh {@code redis-server}: {@value #CONCURRENCY} threads over 1,000 keys.
   *
   * @param subject the figure's subject
   * @param what the case, in words
   * @param decide one decision, which must be an allow
   * @throws IllegalStateException if a decision was a deny, Redis failed, or a decision took other
   *     than one round trip
   */
  static LoadFigure run(Duration warmup, Duration measure, String subject, String what,
      Decide decide) throws InterruptedException {
    return run(warmup, measure, subject, what, decide, Around.NONE);
  }

  /**
   * Runs one case like {@link #run(Duration, Duration, String, String, Decide)}, with {@code
   * around} before the counted calls and after their check.
   *
   * @throws IllegalStateException also if {@code around}'s check fails
   */
  static LoadFigure run(Duration warmup, Duration measure, String subject, String what,
      Decide decide, Around around) throws InterruptedException {
    try (RedisLimiter redis = new RedisLimiter();
        CommandStats stats = CommandStats.of(redis.server)) {
      around.before(redis);
      LongAdder decisions = new LongAdder();
      double[] cpu = new double[2];
      CommandStats.Totals[] scripts = new CommandStats.Totals[2];
      redis.roundTrips.mark();
      ClosedLoopLoad.Result r = ClosedLoopLoad.run(CONCURRENCY, warmup, measure,
          overKeys(decisions, key -> decide.decide(redis, key)), () -> {
        cpu[0] = redis.info.cpuSeconds();
        scripts[0] = stats.read();
      }, () -> {
        cpu[1] = redis.info.cpuSeconds();
        scripts[1] = stats.read();
      });
      redis.checkNoErrors();
      double roundTrips = redis.roundTrips.verify(decisions.sum());
      around.after(redis, decisions.sum());
      return figure(subject, what + ", 1,000 keys", r, cpu, roundTrips,
          (double) (scripts[1].usec() - scripts[0].usec())
              / (scripts[1].calls() - scripts[0].calls()));
    }
  }

  private static LoadFigure evalsha(Duration warmup, Duration measure)
      throws InterruptedException {
    try (RedisClientOnServer redis = new RedisClientOnServer();
        RedisInfo info = new RedisInfo(redis.server.uri());
        StatefulRedisConnection<String, String> connection = redis.client.connect()) {
      RedisCommands<String, String> commands = connection.sync();
      String sha = commands.scriptLoad("return 1");
      long before = info.calls("evalsha");
      LongAdder calls = new LongAdder();
      double[] cpu = new double[2];
      ClosedLoopLoad.Result r = ClosedLoopLoad.run(CONCURRENCY, warmup, measure, worker -> {
        calls.increment();
        Long one = commands.evalsha(sha, ScriptOutputType.INTEGER);
        if (one == null || one != 1L) {
          throw new IllegalStateException("EVALSHA return 1 answered " + one);
        }
      }, () -> cpu[0] = info.cpuSeconds(), () -> cpu[1] = info.cpuSeconds());
      long ran = info.calls("evalsha") - before;
      if (ran != calls.sum()) {
        throw new IllegalStateException(calls.sum() + " EVALSHA calls, but Redis ran " + ran);
      }
      return figure(LoadFigure.REDIS_PIPELINED_FLOOR, "raw EVALSHA return 1", r, cpu, 1.0,
          Double.NaN);
    }
  }

  /**
   * Runs {@code floor}'s script pipelined alike on a fresh {@code redis-server}, with or without
   * the decision's commands; the case names the Redis time per call of each of {@code named}
   * ({@code INFO commandstats}, the command's own run, without the script's conversions).
   *
   * @throws IllegalStateException if a reply was not the decision's size, or the server ran a
   *     command other than the scripts, {@code named} and the statistics' own {@code INFO}
   */
  private static LoadFigure floor(Duration warmup, Duration measure, String subject, String what,
      CommandFloor floor, boolean withCommands, List<String> named) throws InterruptedException {
    try (RedisClientOnServer redis = new RedisClientOnServer();
        RedisInfo info = new RedisInfo(redis.server.uri());
        StatefulRedisConnection<String, String> connection = redis.client.connect()) {
      RedisCommands<String, String> commands = connection.sync();
      floor.load(commands);
      LongAdder calls = new LongAdder();
      double[] cpu = new double[2];
      String[] stats = new String[2];
      int[] next = new int[CONCURRENCY * 16];
      ClosedLoopLoad.Result r = ClosedLoopLoad.run(CONCURRENCY, warmup, measure, worker -> {
        int slot = worker * 16;
        int i = next[slot];
        next[slot] = i + 1 == RedisStoreBenchmark.KEY_COUNT ? 0 : i + 1;
        calls.increment();
        floor.call(commands,
            (i + worker * RedisStoreBenchmark.KEY_COUNT / CONCURRENCY) % RedisStoreBenchmark.KEY_COUNT,
            withCommands);
      }, () -> {
        cpu[0] = info.cpuSeconds();
        stats[0] = info.commandStats();
      }, () -> {
        cpu[1] = info.cpuSeconds();
        stats[1] = info.commandStats();
      });
      long scripts = RedisInfo.calls(stats[1], "evalsha") - RedisInfo.calls(stats[0], "evalsha");
      StringBuilder perCommand = new StringBuilder();
      for (String command : named) {
        long n = RedisInfo.calls(stats[1], command) - RedisInfo.calls(stats[0], command);
        double usec = RedisInfo.usec(stats[1], command) - RedisInfo.usec(stats[0], command);
        perCommand.append(perCommand.isEmpty() ? " (" : ", ").append(String.format(Locale.ROOT,
            "%s %.2f× %.2f µs", command.toUpperCase(Locale.ROOT), (double) n / scripts,
            n == 0 ? 0 : usec / n));
      }
      long others = RedisInfo.totalCalls(stats[1]) - RedisInfo.totalCalls(stats[0])
          - scripts - named.stream().mapToLong(c -> RedisInfo.calls(stats[1], c)
              - RedisInfo.calls(stats[0], c)).sum()
          - (RedisInfo.calls(stats[1], "info") - RedisInfo.calls(stats[0], "info"));
      if (others != 0) {
        throw new IllegalStateException(what + ": the server ran " + others
            + " other commands: " + stats[1]);
      }
      if (!perCommand.isEmpty()) {
        perCommand.append(" per decision, Redis time per call)");
      }
      double perCall = (double) (RedisInfo.usec(stats[1], "evalsha")
          - RedisInfo.usec(stats[0], "evalsha")) / scripts;
      return figure(subject, what + perCommand + ", 1,000 keys", r, cpu, 1.0, perCall);
    }
  }

  static LoadFigure figure(String subject, String scenario, ClosedLoopLoad.Result r,
      double[] cpu, double roundTrips, double scriptMicros) {
    return new LoadFigure(subject, scenario + ", " + CONCURRENCY + " threads on one connection",
        r.concurrency(), r.seconds(), r.calls(), r.callsPerSecond(),
        r.latencies().percentile(50) / 1e6, r.latencies().percentile(99) / 1e6,
        (cpu[1] - cpu[0]) / r.seconds() * 100, roundTrips, scriptMicros);
  }
}
