package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Ticker;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;

/**
 * The Redis servers the tests share, started once per test JVM: a standalone server ({@code
 * REDIS_URL} when set) and a 3-master Redis Cluster on loopback ports, each with one Lettuce client
 * that the stores under test borrow. Tests isolate themselves with a fresh key prefix. Public (and
 * in this module's test jar) for {@link #startCluster}, which the Spring tests use too.
 */
public final class TestRedis {

  /** A generous timeout for tests that are not about timeouts, so a busy CI machine never trips it. */
  static final Duration TEST_TIMEOUT = Duration.ofSeconds(5);

  private static final AtomicInteger PREFIXES = new AtomicInteger();
  private static RedisURI standaloneUri;
  private static RedisClient standaloneClient;
  private static RedisCommands<String, String> standaloneCommands;
  private static List<RedisServer> clusterNodes;
  private static RedisClusterClient clusterClient;

  private TestRedis() {}

  /** A key prefix no other store in this JVM uses. */
  static String freshPrefix() {
    return "t" + ProcessHandle.current().pid() + "-" + PREFIXES.incrementAndGet();
  }

  static synchronized RedisURI standaloneUri() {
    if (standaloneUri == null) {
      String url = System.getenv("REDIS_URL");
      standaloneUri = url != null && !url.isBlank() ? RedisURI.create(url) : RedisServer.start().uri();
    }
    return standaloneUri;
  }

  /** Commands on the shared standalone server, for tests that look at its keys themselves. */
  static synchronized RedisCommands<String, String> standaloneCommands() {
    if (standaloneCommands == null) {
      standaloneCommands = standaloneClient().connect(standaloneUri()).sync();
    }
    return standaloneCommands;
  }

  /** The calls of each command since the stats were last reset, from {@code INFO commandstats}. */
  static Map<String, Long> commandCalls(RedisCommands<String, String> redis) {
    Map<String, Long> calls = new HashMap<>();
    for (String line : redis.info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_")) {
        String name = line.substring("cmdstat_".length(), line.indexOf(':'));
        String count = line.substring(line.indexOf("calls=") + 6, line.indexOf(','));
        calls.put(name, Long.parseLong(count));
      }
    }
    return calls;
  }

  static synchronized RedisClient standaloneClient() {
    if (standaloneClient == null) {
      standaloneClient = RedisClient.create(standaloneUri());
      Runtime.getRuntime().addShutdownHook(new Thread(standaloneClient::shutdown));
    }
    return standaloneClient;
  }

  /**
   * A gateway instance of its own on the shared standalone server: a client and connection of its
   * own, server time, fail-closed, under {@code prefix} (give two instances one prefix to share).
   */
  static RedisRateLimitStore gatewayInstance(String prefix) {
    return RedisRateLimitStore.builder(standaloneUri())
        .keyPrefix(prefix)
        .commandTimeout(TEST_TIMEOUT)
        .failurePolicy(FailurePolicy.FAIL_CLOSED)
        .build();
  }

  /**
   * A store on the shared standalone server, reading time from {@code ticker}, keys hashed. Its
   * slots count until their lease timeout unless released, as on the in-memory store, since a test's
   * ticker may jump further than a renewal interval: tests of slot leases set their own.
   */
  static RedisRateLimitStore.Builder standalone(Ticker ticker) {
    return RedisRateLimitStore.builder(standaloneClient(), standaloneUri())
        .keyPrefix(freshPrefix())
        .commandTimeout(TEST_TIMEOUT)
        .failurePolicy(FailurePolicy.FAIL_CLOSED)
        .slotLease(ConcurrencyLimit.MAX_LEASE)
        .ticker(ticker);
  }

  /**
   * A store on the shared 3-master Cluster, reading time from {@code ticker}, with keys in clear
   * (the standalone stores hash them, as by default, so both layouts run every suite). Its slots
   * count until their lease timeout unless released, as {@link #standalone}'s.
   */
  static RedisRateLimitStore.Builder cluster(Ticker ticker) {
    return RedisRateLimitStore.builder(clusterClient())
        .keyPrefix(freshPrefix())
        .hashKeys(false)
        .commandTimeout(TEST_TIMEOUT)
        .failurePolicy(FailurePolicy.FAIL_CLOSED)
        .slotLease(ConcurrencyLimit.MAX_LEASE)
        .ticker(ticker);
  }

  static synchronized RedisClusterClient clusterClient() {
    if (clusterClient == null) {
      List<RedisServer> nodes = startCluster(3);
      List<RedisURI> seeds = new ArrayList<>();
      nodes.forEach(n -> seeds.add(n.uri()));
      clusterClient = RedisClusterClient.create(seeds);
      clusterNodes = nodes;
      Runtime.getRuntime().addShutdownHook(new Thread(clusterClient::shutdown));
    }
    return clusterClient;
  }

  static synchronized List<RedisServer> clusterNodes() {
    clusterClient();
    return clusterNodes;
  }

  /**
   * Starts {@code masters} Cluster-enabled nodes, gives each an equal share of the 16384 slots
   * ({@code CLUSTER ADDSLOTS}), introduces them ({@code CLUSTER MEET}) and waits until every node
   * reports {@code cluster_state:ok}.
   */
  public static List<RedisServer> startCluster(int masters) {
    return startCluster(masters, new String[0]);
  }

  /**
   * Starts a Cluster as {@link #startCluster(int)} does, each node with {@code extraArgs} added to
   * its command line (for example {@code --cluster-require-full-coverage no}). Node {@code i}
   * serves the hash slots from {@code i * (16384 / masters)} to the next node's first (the last
   * node to 16383).
   */
  public static List<RedisServer> startCluster(int masters, String... extraArgs) {
    List<RedisServer> nodes = new ArrayList<>();
    for (int i = 0; i < masters; i++) {
      nodes.add(RedisServer.startClusterNode(extraArgs));
    }
    List<RedisClient> clients = new ArrayList<>();
    try {
      List<RedisCommands<String, String>> admin = new ArrayList<>();
      for (RedisServer n : nodes) {
        RedisClient c = RedisClient.create(n.uri());
        clients.add(c);
        StatefulRedisConnection<String, String> conn = c.connect();
        admin.add(conn.sync());
      }
      int per = 16384 / masters;
      for (int i = 0; i < masters; i++) {
        int from = i * per;
        int to = i == masters - 1 ? 16384 : from + per;
        admin.get(i).clusterAddSlots(IntStream.range(from, to).toArray());
      }
      for (int i = 1; i < masters; i++) {
        admin.get(0).clusterMeet("127.0.0.1", nodes.get(i).port());
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!admin.stream().allMatch(a -> a.clusterInfo().contains("cluster_state:ok")
          && a.clusterInfo().contains("cluster_known_nodes:" + masters))) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException("the test cluster did not reach cluster_state:ok");
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // bounded wait for start-up
      }
    } finally {
      clients.forEach(RedisClient::shutdown);
    }
    return nodes;
  }
}
