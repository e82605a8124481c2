package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.WindowLimit;
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
 * What one decision costs: the Redis server's time per {@code EVALSHA} ({@code usec_per_call} of
 * {@code INFO commandstats}: wall time, which a busy machine inflates), its CPU time per decision
 * ({@code INFO cpu}, the whole command: reading, running, replying), the commands the script ran
 * per decision, the client JVM's bytes
 * allocated and CPU time per decision (all threads), which depend little on the machine's load,
 * and the latency per decision, which does; for a raw {@code EVALSHA} of {@code return {1}} and for
 * the store's cases, each on a fresh {@code redis-server}, from one thread. Then the throughput
 * of the store over raw {@code EVALSHA} from 1 and from 8 threads, in alternating slices.
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
    System.out.printf(Locale.ROOT, "%-44s %10s %10s %10s %10s %12s %12s%n",
        "case (" + calls + " calls, 1 thread)", "Redis µs", "Redis CPU", "cmds/call", "client B",
        "client CPU µs", "latency µs");
    rawEvalsha(calls);
    store("store: window + bucket, 1 key", calls, 0, (store) -> i ->
        store.acquire(WINDOW_AND_BUCKET, "tenant", 1, Composition.SEQUENTIAL).allowed());
    store("store: window + bucket, 1,000 keys", calls, 0, (store) -> i ->
        store.acquire(WINDOW_AND_BUCKET, "tenant-" + i % 1000, 1, Composition.SEQUENTIAL)
            .allowed());
    store("store: + model tokens (reserve), 1,000 keys", calls, 0, (store) -> i ->
        RedisLimiter.reserved(store, true, "tenant-" + i % 1000, null).decision()
            .allowed());
    store("store: 3 levels, sequential", calls, 0, (store) -> i ->
        store.acquire(List.of(WINDOW_AND_BUCKET, KEY, MODEL), List.of("acme", "k", "k/m"), 1,
            Composition.SEQUENTIAL).allowed());
    store("store: 3 levels, reserve-then-commit", calls, 0, (store) -> i ->
        store.acquire(List.of(WINDOW_AND_BUCKET, KEY, MODEL), List.of("acme", "k", "k/m"), 1,
            Composition.RESERVE_COMMIT).allowed());
    store("store: " + LARGE_LOG + "+ admissions in the window", Math.min(calls, 5_000), LARGE_LOG,
        (store) -> i -> store.acquire(LARGE, "big", 1, Composition.SEQUENTIAL).allowed());
    interleaved(1);
    interleaved(8);
  }

  /**
   * Throughput of the store (window + bucket, one hot key) over raw {@code EVALSHA return {1}} on
   * one server, in alternating slices of 250 ms, so that both see the same load: the median and
   * the range of the per-round ratios.
   */
  private static void interleaved(int threads) {
    int rounds = 15;
    double[] ratios = new double[rounds];
    try (RedisServer server = RedisServer.start();
        RedisRateLimitStore store = RedisLimiter.measured(server)
            .build()) {
      RedisClient client = RedisClient.create(server.uri());
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        RedisCommands<String, String> commands = c.sync();
        String sha = commands.scriptLoad("return {1}");
        IntPredicate raw = i -> commands.<List<Object>>evalsha(sha, ScriptOutputType.MULTI).size() == 1;
        IntPredicate limited = i ->
            store.acquire(WINDOW_AND_BUCKET, "tenant", 1, Composition.SEQUENTIAL).allowed();
        slice(raw, threads, 1_000);
        slice(limited, threads, 1_000);
        for (int r = 0; r < rounds; r++) {
          double rawRate = slice(raw, threads, 250);
          ratios[r] = slice(limited, threads, 250) / rawRate;
        }
      } finally {
        client.shutdown();
      }
    }
    java.util.Arrays.sort(ratios);
    System.out.printf(Locale.ROOT,
        "store ÷ raw EVALSHA, %d thread(s), %d alternating rounds: median %.2f (%.2f to %.2f)%n",
        threads, rounds, ratios[rounds / 2], ratios[0], ratios[rounds - 1]);
  }

  /** Calls per second of {@code call} from {@code threads} threads for {@code millis}. */
  private static double slice(IntPredicate call, int threads, long millis) {
    java.util.concurrent.atomic.LongAdder done = new java.util.concurrent.atomic.LongAdder();
    long start = System.nanoTime();
    long end = start + millis * 1_000_000;
    Thread[] workers = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      workers[t] = new Thread(() -> {
        int i = 0;
        while (System.nanoTime() - end < 0) {
          check(call.test(i++), "interleaved");
          done.increment();
        }
      });
      workers[t].start();
    }
    for (Thread w : workers) {
      try {
        w.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    return done.sum() * 1e9 / (System.nanoTime() - start);
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
        RedisRateLimitStore store = RedisLimiter.measured(server)
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
    double redisCpu = info.cpuSeconds();
    long allocated = allocatedBytes();
    long cpu = processCpuNanos();
    long start = System.nanoTime();
    for (int i = 0; i < calls; i++) {
      check(call.test(i), name);
    }
    long wall = System.nanoTime() - start;
    cpu = processCpuNanos() - cpu;
    long bytes = allocatedBytes() - allocated;
    redisCpu = info.cpuSeconds() - redisCpu;
    String stats = info.commandStats();
    long evalsha = RedisInfo.calls(stats, "evalsha");
    double usec = RedisInfo.usec(stats, "evalsha");
    long all = RedisInfo.totalCalls(stats) - RedisInfo.calls(stats, "config");
    System.out.printf(Locale.ROOT, "%-44s %10.2f %10.2f %10.2f %10.0f %12.2f %12.2f%n", name,
        (double) usec / evalsha, redisCpu * 1e6 / calls, (double) (all - evalsha) / evalsha,
        (double) bytes / calls, cpu / 1000.0 / calls, wall / 1000.0 / calls);
  }

  private static void check(boolean allowed, String name) {
    if (!allowed) {
      throw new IllegalStateException(name + ": a call was denied");
    }
  }

  /** CPU time this JVM (every thread: the caller, Lettuce's event loop, the GC) used so far. */
  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
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
