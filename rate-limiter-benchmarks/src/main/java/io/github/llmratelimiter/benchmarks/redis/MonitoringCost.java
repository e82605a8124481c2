package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.redis.FailurePolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * What the Redis store's monitoring reads cost Redis and their caller at many tracked keys: fills a
 * redis-server of its own with one call per key through the store (a budget with a window, a bucket
 * and a daily token quota, so every key has a state and a quota counter), then times {@code
 * top(10)}, {@code trackedKeys} and {@code topSpenders(10)} through the store's administration (as
 * the Actuator endpoint and the console call them) and counts the commands each sends ({@code INFO
 * commandstats}, the scripts' own commands included). For scale, it times one {@code SCAN MATCH}
 * pass over the keyspace, what a read that scans for a budget's keys costs at the least. Prints a
 * Markdown table.
 *
 * <p>Run after {@code ./mvnw -pl rate-limiter-benchmarks -am package -DskipTests}: {@code java -cp
 * rate-limiter-benchmarks/target/benchmarks.jar
 * io.github.llmratelimiter.benchmarks.redis.MonitoringCost [keys, default 1000000]}.
 */
public final class MonitoringCost {

  private static final int REPEATS = 20;
  private static final QuotaLimit DAILY =
      QuotaLimit.of("daily", QuotaUnit.TOKENS, QuotaLimit.MAX_LIMIT, QuotaPeriod.DAY);
  private static final Budget CHAT = new Budget("chat",
      new WindowLimit(1_000, Duration.ofHours(1)), new BucketLimit(100, 10), null, null,
      List.of(DAILY), null);

  private MonitoringCost() {}

  /**
   * Runs the measurement.
   *
   * @param args the number of keys (default 1,000,000)
   */
  public static void main(String[] args) {
    int keys = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    try (RedisServer server = RedisServer.start();
        RedisInfo info = new RedisInfo(server.uri());
        RedisRateLimitStore store = RedisRateLimitStore.builder(server.uri()).keyPrefix("bench")
            .failurePolicy(FailurePolicy.FAIL_CLOSED).commandTimeout(Duration.ofSeconds(30))
            .heartbeatInterval(RedisLimiter.NO_HEARTBEAT)
            .build()) {
      long start = System.nanoTime();
      fill(store, keys);
      double fillSeconds = (System.nanoTime() - start) / 1e9;
      StoreAdministration admin = store.administration().orElseThrow();
      List<String> rows = new ArrayList<>();
      rows.add(row(info, "top(10)", () -> admin.top(CHAT, 10).size()));
      rows.add(row(info, "trackedKeys", () -> admin.trackedKeys(CHAT)));
      rows.add(row(info, "topSpenders(10)", () -> admin.topSpenders(CHAT, DAILY, 10).size()));
      RedisClient client = RedisClient.create(server.uri());
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        RedisCommands<String, String> redis = c.sync();
        rows.add(row(info, "for scale: one SCAN MATCH pass (COUNT 1000)",
            () -> scanPass(redis, "bench:{*}:chat:*:s")));
        System.out.printf(Locale.ROOT, "Redis %s, %,d keys in Redis (%,d tracked keys filled in"
                + " %.1f s), monitoring structures %,d bytes (MEMORY USAGE)%n%n", info.version(),
            redis.dbsize(), keys, fillSeconds, monitoringBytes(redis));
      } finally {
        client.shutdown();
      }
      System.out.println("| Read | Answer | median ms | max ms | commands per call | SCAN per call |");
      System.out.println("|---|---:|---:|---:|---:|---:|");
      rows.forEach(System.out::println);
    }
  }

  /** One reserve per key, {@code 1 + i % 1000} tokens each, at most 1,000 in flight. */
  private static void fill(RedisRateLimitStore store, int keys) {
    List<CompletableFuture<?>> inFlight = new ArrayList<>();
    for (int i = 0; i < keys; i++) {
      inFlight.add(store.reserveAsync(List.of(CHAT), List.of("tenant-" + i), 1,
          Consumption.ofCall(1 + i % 1000, 0), Composition.SEQUENTIAL).toCompletableFuture());
      if (inFlight.size() == 1_000) {
        inFlight.forEach(CompletableFuture::join);
        inFlight.clear();
      }
    }
    inFlight.forEach(CompletableFuture::join);
  }

  /** Times {@value #REPEATS} calls of a read after three warm-up calls; counts its commands. */
  private static String row(RedisInfo info, String name, Supplier<Object> read) {
    Object answer = null;
    for (int i = 0; i < 3; i++) {
      answer = read.get();
    }
    String before = info.commandStats();
    long[] nanos = new long[REPEATS];
    for (int i = 0; i < REPEATS; i++) {
      long t = System.nanoTime();
      answer = read.get();
      nanos[i] = System.nanoTime() - t;
    }
    String after = info.commandStats();
    Arrays.sort(nanos);
    // the INFO commandstats call of `before` counts in `after`
    double commands = (RedisInfo.totalCalls(after) - RedisInfo.totalCalls(before) - 1.0) / REPEATS;
    double scans = (double) (RedisInfo.calls(after, "scan") - RedisInfo.calls(before, "scan"))
        / REPEATS;
    return String.format(Locale.ROOT, "| %s | %s | %.2f | %.2f | %.1f | %.1f |", name, answer,
        nanos[REPEATS / 2] / 1e6, nanos[REPEATS - 1] / 1e6, commands, scans);
  }

  /** Walks the whole keyspace once with {@code SCAN MATCH}; returns the keys that matched. */
  private static long scanPass(RedisCommands<String, String> redis, String pattern) {
    ScanArgs args = ScanArgs.Builder.matches(pattern).limit(1000);
    KeyScanCursor<String> cursor = redis.scan(args);
    long found = cursor.getKeys().size();
    while (!cursor.isFinished()) {
      cursor = redis.scan(cursor, args);
      found += cursor.getKeys().size();
    }
    return found;
  }

  /** The memory of the monitoring structures (every key of the bucket tag {@code ~}). */
  private static long monitoringBytes(RedisCommands<String, String> redis) {
    long bytes = 0;
    ScanArgs args = ScanArgs.Builder.matches("bench:{~}:*").limit(1000);
    KeyScanCursor<String> cursor = redis.scan(args);
    while (true) {
      for (String key : cursor.getKeys()) {
        Long used = redis.memoryUsage(key);
        bytes += used == null ? 0 : used;
      }
      if (cursor.isFinished()) {
        return bytes;
      }
      cursor = redis.scan(cursor, args);
    }
  }
}
