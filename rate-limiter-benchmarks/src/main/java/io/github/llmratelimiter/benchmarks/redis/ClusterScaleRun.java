package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.benchmarks.load.ClosedLoopLoad;
import io.github.llmratelimiter.benchmarks.report.ClusterFigure;
import io.github.llmratelimiter.benchmarks.report.Machine;
import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.GatewayLimiter;
import io.github.llmratelimiter.core.HierarchicalLimiter;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Scale-out on a Redis Cluster: the store as the auto-configuration builds it for a Cluster
 * ({@code RedisRateLimitStore.cluster(seeds)}, keys hashed), called from {@value #CONCURRENCY}
 * threads over many keys, on a fresh local Cluster of {@link #MASTERS} masters (no replicas)
 * per case. Two cases: a window and a bucket over 10,000 tenants (10,000 hash tags), and a
 * two-level hierarchy (API key, then API key and model) over 10,000 leaves under 1,000 API keys,
 * whose hash tag is the API key, so each decision's keys lie in one slot.
 *
 * <p>Reports decisions per second, latency, the CPU of all masters together ({@code INFO cpu}
 * of each) and of the client's JVM over the measured period, and reads back from every master
 * which hash tags its keys carry. Checks that each decision was exactly one script call, counted
 * by the client and summed over the masters' {@code INFO commandstats}.
 *
 * <p>All processes (the client's JVM and every {@code redis-server}) share this machine's cores.
 */
public final class ClusterScaleRun {

  /** The threads calling the store: enough to keep 6 masters' connections pipelined. */
  public static final int CONCURRENCY = 64;

  /** The Cluster sizes, in masters. */
  public static final List<Integer> MASTERS = List.of(1, 3, 6);

  /** The tenants of the window-and-bucket case. */
  static final int TENANTS = 10_000;

  /** The API keys (roots) of the hierarchy case. */
  static final int API_KEYS = 1_000;

  /** The models per API key of the hierarchy case. */
  static final int MODELS = 10;

  /**
   * The buckets' refill: so slow that a key's state, which expires once its bucket would be full
   * again, outlives the case (a call takes one token, so a key lives 1,000 s per call), and the
   * keys can be read back from the masters. The scripts' work does not depend on it.
   */
  static final double REFILL_PER_SECOND = 0.001;

  /** The keys' prefix in Redis: the store's default. */
  private static final String PREFIX = RedisRateLimitStore.Builder.DEFAULT_KEY_PREFIX;

  private ClusterScaleRun() {}

  /** One case: its keys, and the limiter that decides for them on a store. */
  record Case(String scenario, List<List<String>> keys,
      Function<RedisRateLimitStore, Function<List<String>, Decision>> limiter) {}

  /**
   * Runs both cases on Clusters of 1, 3 and 6 masters, each case on a fresh Cluster.
   *
   * @param warmup each case's warm-up
   * @param measure each case's measured period
   * @return the figures, by case then masters
   * @throws InterruptedException if interrupted
   * @throws IllegalStateException if a decision was a deny, Redis failed, or a decision took other
   *     than one script call
   */
  public static List<ClusterFigure> run(Duration warmup, Duration measure)
      throws InterruptedException {
    List<ClusterFigure> figures = new ArrayList<>();
    for (Case c : List.of(windowAndBucket(), hierarchy())) {
      for (int masters : MASTERS) {
        ClusterFigure f = run(c, masters, warmup, measure);
        System.out.println(f);
        figures.add(f);
      }
    }
    return figures;
  }

  static Case windowAndBucket() {
    List<List<String>> keys = new ArrayList<>();
    for (int i = 0; i < TENANTS; i++) {
      keys.add(List.of("tenant-" + i));
    }
    return new Case(String.format(Locale.ROOT, "window + bucket, %,d tenants", TENANTS), keys, store -> {
      GatewayLimiter limiter = GatewayLimiter.builder()
          .requestsPerWindow(RedisLimiter.WINDOW_LIMIT, RedisLimiter.WINDOW)
          .burst(RedisLimiter.TOKENS, REFILL_PER_SECOND)
          .composition(Composition.SEQUENTIAL)
          .store(store)
          .build();
      return key -> limiter.allow(key.get(0));
    });
  }

  static Case hierarchy() {
    List<List<String>> keys = new ArrayList<>();
    for (int i = 0; i < API_KEYS * MODELS; i++) {
      String apiKey = "sk-" + (i % API_KEYS);
      keys.add(List.of(apiKey, apiKey + ":model-" + (i / API_KEYS)));
    }
    return new Case(String.format(Locale.ROOT, "two levels (API key, model), %,d leaves under %,d API keys",
        API_KEYS * MODELS, API_KEYS), keys, store -> {
      WindowLimit window = new WindowLimit(RedisLimiter.WINDOW_LIMIT, RedisLimiter.WINDOW);
      BucketLimit bucket = new BucketLimit(RedisLimiter.TOKENS, REFILL_PER_SECOND);
      HierarchicalLimiter limiter = HierarchicalLimiter.builder()
          .level(Budget.of("api-key", window, bucket))
          .level(Budget.of("model", window, bucket))
          .composition(Composition.SEQUENTIAL)
          .store(store)
          .build();
      return limiter::allow;
    });
  }

  private static ClusterFigure run(Case c, int masters, Duration warmup, Duration measure)
      throws InterruptedException {
    System.out.println("# Redis Cluster of " + masters + " master(s): " + c.scenario());
    CommandCounter commands = new CommandCounter();
    ClientResources resources =
        DefaultClientResources.builder().commandLatencyRecorder(commands).build();
    try (RedisCluster cluster = RedisCluster.start(masters);
        RedisRateLimitStore store = RedisLimiter.measured(RedisRateLimitStore.cluster(
            cluster.seeds())).clientResources(resources).build()) {
      Function<List<String>, Decision> decide = c.limiter().apply(store);
      List<List<String>> keys = c.keys();
      int[] next = new int[CONCURRENCY * 16]; // one slot per worker, 16 apart (no false sharing)
      LongAdder decisions = new LongAdder();
      double[] redisCpu = new double[2];
      long[] clientCpu = new long[2];
      String[] load = new String[1];
      long[] scriptsBefore = scripts(cluster);
      long clientScriptsBefore = clientScripts(commands);
      ClosedLoopLoad.Result r = ClosedLoopLoad.run(CONCURRENCY, warmup, measure, worker -> {
        int slot = worker * 16;
        int i = next[slot];
        next[slot] = i + 1 == keys.size() ? 0 : i + 1;
        decisions.increment();
        Decision d = decide.apply(keys.get((i + worker * keys.size() / CONCURRENCY) % keys.size()));
        if (!d.allowed()) {
          throw new IllegalStateException("an allowed case was denied: " + d
              + " (Redis errors so far: " + store.errorCount() + ")");
        }
      }, () -> {
        load[0] = Machine.loadAverage();
        clientCpu[0] = processCpuNanos();
        redisCpu[0] = cpuSeconds(cluster);
      }, () -> {
        redisCpu[1] = cpuSeconds(cluster);
        clientCpu[1] = processCpuNanos();
      });
      if (store.errorCount() != 0) {
        throw new IllegalStateException(store.errorCount() + " Redis calls failed");
      }
      long[] scriptsAfter = scripts(cluster);
      List<Long> perMaster = new ArrayList<>();
      long serverScripts = 0;
      for (int m = 0; m < masters; m++) {
        perMaster.add(scriptsAfter[m] - scriptsBefore[m]);
        serverScripts += scriptsAfter[m] - scriptsBefore[m];
      }
      long clientScripts = clientScripts(commands) - clientScriptsBefore;
      if (clientScripts != decisions.sum() || serverScripts != decisions.sum()) {
        throw new IllegalStateException(String.format(Locale.ROOT,
            "not one script call per decision: %d decisions, %d script calls sent (%s), %d run by"
                + " the masters %s", decisions.sum(), clientScripts, commands.snapshot(),
            serverScripts, perMaster));
      }
      Layout layout = Layout.read(cluster);
      return new ClusterFigure(masters, c.scenario(), r.concurrency(), r.seconds(), r.calls(),
          r.callsPerSecond(), r.latencies().percentile(50) / 1e6,
          r.latencies().percentile(99) / 1e6, (redisCpu[1] - redisCpu[0]) / r.seconds() * 100,
          (clientCpu[1] - clientCpu[0]) / 1e9 / r.seconds() * 100, load[0], perMaster,
          layout.tagsPerMaster, layout.keysPerMaster, layout.tags, layout.tagsOnSeveralMasters,
          layout.minKeysPerTag, layout.maxKeysPerTag);
    } finally {
      resources.shutdown();
    }
  }

  /** The script calls ({@code EVALSHA} and {@code EVAL}) the client completed so far. */
  static long clientScripts(CommandCounter commands) {
    Map<String, Long> s = commands.snapshot();
    return s.getOrDefault("EVALSHA", 0L) + s.getOrDefault("EVAL", 0L);
  }

  /** The script calls each master ran so far, in slot order. */
  private static long[] scripts(RedisCluster cluster) {
    List<RedisInfo> masters = cluster.masters();
    long[] calls = new long[masters.size()];
    for (int m = 0; m < calls.length; m++) {
      String stats = masters.get(m).commandStats();
      calls[m] = RedisInfo.calls(stats, "evalsha") + RedisInfo.calls(stats, "eval");
    }
    return calls;
  }

  /** The CPU seconds of every master together. */
  static double cpuSeconds(RedisCluster cluster) {
    double sum = 0;
    for (RedisInfo m : cluster.masters()) {
      sum += m.cpuSeconds();
    }
    return sum;
  }

  /** The CPU time of this JVM, all threads, in nanoseconds. */
  private static long processCpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getProcessCpuTime();
    }
    return 0;
  }

  /**
   * How the limiter keys lie over the masters, read back with {@code SCAN} on each: the distinct
   * hash tags and the keys per master, the tags found on more than one, and the keys per tag.
   */
  record Layout(List<Integer> tagsPerMaster, List<Long> keysPerMaster, int tags,
      int tagsOnSeveralMasters, int minKeysPerTag, int maxKeysPerTag) {

    static Layout read(RedisCluster cluster) {
      List<List<String>> keys = new ArrayList<>();
      for (RedisInfo m : cluster.masters()) {
        keys.add(scan(m.commands()));
      }
      return of(keys);
    }

    /**
     * Tallies the limiter keys found on each master ({@code keysByMaster}, in slot order); keys
     * without a limiter hash tag (the monitoring buckets', the instances') are left out.
     */
    static Layout of(List<List<String>> keysByMaster) {
      Map<String, Set<Integer>> mastersOfTag = new HashMap<>();
      Map<String, Integer> keysOfTag = new HashMap<>();
      List<Integer> tagsPerMaster = new ArrayList<>();
      List<Long> keysPerMaster = new ArrayList<>();
      for (int m = 0; m < keysByMaster.size(); m++) {
        Set<String> tags = new HashSet<>();
        long count = 0;
        for (String key : keysByMaster.get(m)) {
          String tag = limiterTag(key);
          if (tag != null) {
            tags.add(tag);
            count++;
            mastersOfTag.computeIfAbsent(tag, t -> new HashSet<>()).add(m);
            keysOfTag.merge(tag, 1, Integer::sum);
          }
        }
        tagsPerMaster.add(tags.size());
        keysPerMaster.add(count);
      }
      int several = (int) mastersOfTag.values().stream().filter(s -> s.size() > 1).count();
      int min = keysOfTag.values().stream().mapToInt(Integer::intValue).min().orElse(0);
      int max = keysOfTag.values().stream().mapToInt(Integer::intValue).max().orElse(0);
      return new Layout(tagsPerMaster, keysPerMaster, mastersOfTag.size(), several, min, max);
    }

    /**
     * The hash tag of a limiter key, {@code <prefix>:{<hashed root>}:...}: the hashed root, or
     * null for any other key.
     */
    static @Nullable String limiterTag(String key) {
      String open = PREFIX + ":{#";
      int close = key.indexOf('}');
      if (!key.startsWith(open) || close < open.length()) {
        return null;
      }
      return key.substring(open.length() - 1, close);
    }

    private static List<String> scan(RedisCommands<String, String> commands) {
      List<String> keys = new ArrayList<>();
      ScanArgs args = ScanArgs.Builder.matches(PREFIX + ":{#*").limit(1_000);
      KeyScanCursor<String> cursor = commands.scan(args);
      keys.addAll(cursor.getKeys());
      while (!cursor.isFinished()) {
        cursor = commands.scan(ScanCursor.of(cursor.getCursor()), args);
        keys.addAll(cursor.getKeys());
      }
      return keys;
    }
  }
}
