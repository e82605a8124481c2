package io.github.llmratelimiter.benchmarks.redis;

import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.SlotHash;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;

/**
 * A Redis Cluster of masters only, each a {@link RedisServer} process on loopback: node {@code i}
 * serves the hash slots from {@code i * (16384 / masters)} to the next node's first (the last to
 * 16383), given with {@code CLUSTER ADDSLOTS}, and the nodes meet through {@code CLUSTER MEET}.
 * Each master has an administrative connection of its own ({@link RedisInfo}). Stopped by {@link
 * #close()}.
 */
final class RedisCluster implements AutoCloseable {

  private static final long START_TIMEOUT_SECONDS = 30;

  private final List<RedisServer> nodes;
  private final List<RedisInfo> infos;

  private RedisCluster(List<RedisServer> nodes, List<RedisInfo> infos) {
    this.nodes = nodes;
    this.infos = infos;
  }

  /**
   * Starts {@code masters} nodes, gives each its share of the slots, introduces them and waits
   * until every node reports {@code cluster_state:ok} and knows all the others.
   *
   * @param masters the masters, at least 1
   * @return the running cluster
   * @throws IllegalArgumentException if {@code masters} is below 1 or above 16384
   * @throws IllegalStateException if the cluster is not ok within 30 s
   */
  static RedisCluster start(int masters) {
    if (masters < 1 || masters > SlotHash.SLOT_COUNT) {
      throw new IllegalArgumentException("masters must be between 1 and " + SlotHash.SLOT_COUNT
          + ", but was " + masters);
    }
    List<RedisServer> nodes = new ArrayList<>();
    List<RedisInfo> infos = new ArrayList<>();
    RedisCluster cluster = new RedisCluster(nodes, infos);
    try {
      for (int i = 0; i < masters; i++) {
        nodes.add(RedisServer.startClusterNode());
      }
      for (RedisServer n : nodes) {
        infos.add(new RedisInfo(n.uri()));
      }
      for (int i = 0; i < masters; i++) {
        infos.get(i).commands().clusterAddSlots(IntStream.range(firstSlot(i, masters),
            firstSlot(i + 1, masters)).toArray());
      }
      for (int i = 1; i < masters; i++) {
        infos.get(0).commands().clusterMeet("127.0.0.1", nodes.get(i).port());
      }
      cluster.awaitOk();
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  /**
   * Returns the first hash slot of master {@code i} of {@code masters} ({@code i == masters}: one
   * past the last slot).
   */
  static int firstSlot(int i, int masters) {
    return i == masters ? SlotHash.SLOT_COUNT : i * (SlotHash.SLOT_COUNT / masters);
  }

  private void awaitOk() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
    String known = "cluster_known_nodes:" + nodes.size();
    while (!infos.stream().allMatch(i -> {
      String info = i.commands().clusterInfo();
      return info.contains("cluster_state:ok") && info.contains(known);
    })) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("the Redis Cluster of " + nodes.size()
            + " masters did not reach cluster_state:ok within " + START_TIMEOUT_SECONDS + " s");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // bounded wait for start-up
    }
  }

  /** Returns the URIs a Cluster client starts from: every master. */
  List<RedisURI> seeds() {
    return nodes.stream().map(n -> RedisURI.create(n.uri())).toList();
  }

  /** Returns the administrative connections, one per master, in slot order. */
  List<RedisInfo> masters() {
    return infos;
  }

  /** Returns how many masters the cluster has. */
  int size() {
    return nodes.size();
  }

  /** Closes the administrative connections and stops every node. */
  @Override
  public void close() {
    for (RedisInfo i : infos) {
      try {
        i.close();
      } catch (RuntimeException e) {
        // stopping anyway
      }
    }
    nodes.forEach(RedisServer::close);
  }
}
