package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.redis.FailurePolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.function.IntPredicate;

/**
 * What one decision costs, measured without depending on the machine's load: the Redis server's
 * time per {@code EVALSHA} ({@code usec_per_call} of {@code INFO commandstats}), the commands the
 * script ran per decision, and the client JVM's bytes allocated per decision (all threads), for a
 * raw {@code EVALSHA} of {@code return {1}} and for the store's cases, each on a fresh {@code
 * redis-server}, from one thread.
 *
 * <pre>{@code
 * java -cp rate-limiter-benchmarks/target/benchmarks.jar \
 *     io.github.llmratelimiter.benchmarks.redis.ScriptCost [calls per case, default 30000]
 * }</pre>
 */
public final class ScriptCost {

  private static final Budget WINDOW_AND_BUCKET = Budget.of("org",
      new WindowLimit(RedisLimiter.WINDOW_LIMIT, RedisLimiter.WINDOW),
      new BucketLimit(RedisLimiter.TOKENS, RedisLimiter.REFILL_PER_SECOND));
  /** A large limit: at least {@value #LARGE_LOG} admissions in the window during the case. */
  private static final int LARGE_LOG = 10_000;
  private static final Budget LARGE = Budget.of("large",
      new WindowLimit(1_000_000, Duration.ofMinutes(10)),
      new BucketLimit(RedisLimiter.TOKENS, RedisLimiter.REFILL_PER_SECOND));
  private static final Budget KEY = Budget.of("key",
      new WindowLimit(RedisLimiter.WINDOW_LIMIT, RedisLimiter.WINDOW),
      new BucketLimit(RedisLimiter.TOKENS, RedisLimiter.REFILL_PER_SECOND));
  private static final Budget MODEL = new Budget("model", null,
      new BucketLimit(RedisLimiter.TOKENS, RedisLimiter.REFILL_PER_SECOND));

  private ScriptCost() {}

  /**
   * Runs every case and prints one line each.
   *
   * @param args optionally the number of measured calls per case
   */
  public static void main(String[] args) {
    int calls = args.length > 0 ? Integer.parseInt(args[0]) : 30_000;
    System.out.printf(Locale.ROOT, "%-44s %12s %12s %12s%n", "case (" + calls + " calls, 1 thread)",
        "Redis µs", "cmds/call", "client B/call");
    rawEvalsha(calls);
    store("store: window + bucket, 1 key", calls, 0, (store) -> i ->
        store.acquire(WINDOW_AND_BUCKET, "tenant", 1, Composition.SEQUENTIAL).allowed());
    store("store: window + bucket, 1,000 keys", calls, 0, (store) -> i ->
        store.acquire(WINDOW_AND_BUCKET, "tenant-" + i % 1000, 1, Composition.SEQUENTIAL)
            .allowed());
    store("store: 3 levels, sequential", calls, 0, (store) -> i ->
        store.acquire(List.of(WINDOW_AND_BUCKET, KEY, MODEL), List.of("acme", "k", "k/m"), 1,
            Composition.SEQUENTIAL).allowed());
    store("store: 3 levels, reserve-then-commit", calls, 0, (store) -> i ->
        store.acquire(List.of(WINDOW_AND_BUCKET, KEY, MODEL), List.of("acme", "k", "k/m"), 1,
            Composition.RESERVE_COMMIT).allowed());
    store("store: " + LARGE_LOG + "+ admissions in the window", Math.min(calls, 5_000), LARGE_LOG,
        (store) -> i -> store.acquire(LARGE, "big", 1, Composition.SEQUENTIAL).allowed());
  }

  private static void rawEvalsha(int calls) {
    try (RedisClientOnServer redis = new RedisClientOnServer();
        RedisInfo info = new RedisInfo(redis.server.uri())) {
      StatefulRedisConnection<String, String> c = redis.client.connect();
      RedisCommands<String, String> commands = c.sync();
      String sha = commands.scriptLoad("return {1}");
      measure("raw EVALSHA return {1}", calls, 0, info,
          i -> commands.<List<Object>>evalsha(sha, ScriptOutputType.MULTI).size() == 1);
    }
  }

  /** A store case: {@code call} (made of the store) must answer true for every call. */
  private static void store(String name, int calls, int warmUpCalls,
      java.util.function.Function<RedisRateLimitStore, IntPredicate> call) {
    try (RedisServer server = RedisServer.start();
        RedisInfo info = new RedisInfo(server.uri());
        RedisRateLimitStore store = RedisRateLimitStore.builder(server.uri())
            .failurePolicy(FailurePolicy.FAIL_CLOSED)
            .commandTimeout(Duration.ofSeconds(5))
            .build()) {
      measure(name, calls, warmUpCalls, info, call.apply(store));
      if (store.errorCount() != 0) {
        throw new IllegalStateException(store.errorCount() + " Redis calls failed");
      }
    }
  }

  private static void measure(
      String name, int calls, int warmUpCalls, RedisInfo info, IntPredicate call) {
    for (int i = 0; i < Math.max(warmUpCalls, 5_000); i++) {
      check(call.test(i), name);
    }
    info.resetStats();
    long allocated = allocatedBytes();
    for (int i = 0; i < calls; i++) {
      check(call.test(i), name);
    }
    long bytes = allocatedBytes() - allocated;
    String stats = info.commandStats();
    long evalsha = RedisInfo.calls(stats, "evalsha");
    double usec = RedisInfo.usec(stats, "evalsha");
    long all = RedisInfo.totalCalls(stats) - RedisInfo.calls(stats, "config");
    System.out.printf(Locale.ROOT, "%-44s %12.2f %12.2f %12.0f%n", name, usec / evalsha,
        (double) (all - evalsha) / evalsha, (double) bytes / calls);
  }

  private static void check(boolean allowed, String name) {
    if (!allowed) {
      throw new IllegalStateException(name + ": a call was denied");
    }
  }

  /** Bytes allocated so far by every live thread of this JVM. */
  private static long allocatedBytes() {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (long b : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
      sum += Math.max(0, b);
    }
    return sum;
  }
}
