package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.sentinel.api.sync.RedisSentinelCommands;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Real processes of a Sentinel deployment on loopback: one master, one replica ({@code
 * --replicaof}) and one Sentinel that monitors them with a quorum of 1. {@link #failOver()} kills the
 * master and has the Sentinel promote the replica at once ({@code SENTINEL FAILOVER}), rather than
 * after its down-after period. Public (and in this module's test jar) for the Spring tests.
 */
public final class SentinelGroup implements AutoCloseable {

  /** The name the Sentinel knows the master by. */
  public static final String MASTER_NAME = "mymaster";

  private static final Duration WAIT = Duration.ofSeconds(30);

  private final RedisServer master;
  private final RedisServer replica;
  private final RedisServer sentinel;
  private final RedisClient admin;
  private final RedisSentinelCommands<String, String> sentinelCommands;

  private SentinelGroup(RedisServer master, RedisServer replica, RedisServer sentinel) {
    this.master = master;
    this.replica = replica;
    this.sentinel = sentinel;
    this.admin = RedisClient.create();
    this.sentinelCommands = admin.connectSentinel(sentinel.uri()).sync();
  }

  /**
   * Starts the three processes and waits until the Sentinel knows the replica as a replica in sync
   * with the master, so that it can promote it.
   *
   * @return the running group
   */
  public static SentinelGroup start() {
    RedisServer master = RedisServer.start();
    RedisServer replica = RedisServer.startReplicaOf(master);
    RedisServer sentinel = RedisServer.startSentinel(MASTER_NAME, master);
    SentinelGroup group = new SentinelGroup(master, replica, sentinel);
    try {
      group.await("the Sentinel sees the replica in sync", group::replicaReady);
    } catch (RuntimeException e) {
      group.close();
      throw e;
    }
    return group;
  }

  /**
   * Returns the URI a client uses: the Sentinel and the master's name.
   *
   * @return {@code redis-sentinel://127.0.0.1:<sentinel port>#mymaster}
   */
  public RedisURI uri() {
    return RedisURI.Builder.sentinel("127.0.0.1", sentinel.port(), MASTER_NAME).build();
  }

  /**
   * Returns the master the group started with.
   *
   * @return the first master
   */
  public RedisServer master() {
    return master;
  }

  /**
   * Returns the replica the group started with, the master after {@link #failOver()}.
   *
   * @return the replica
   */
  public RedisServer replica() {
    return replica;
  }

  /**
   * Returns the Sentinel.
   *
   * @return the Sentinel
   */
  public RedisServer sentinel() {
    return sentinel;
  }

  /**
   * Returns the port of the master the Sentinel currently names.
   *
   * @return the port
   */
  public int currentMasterPort() {
    SocketAddress address = sentinelCommands.getMasterAddrByName(MASTER_NAME);
    return ((InetSocketAddress) address).getPort();
  }

  /**
   * Waits until the replica has acknowledged every write the master has taken ({@code WAIT 1}), so
   * that a failover loses nothing.
   */
  public void awaitReplicated() {
    try (StatefulRedisConnection<String, String> c = admin.connect(master.uri())) {
      long acknowledged = c.sync().waitForReplication(1, WAIT.toMillis());
      if (acknowledged != 1) {
        throw new IllegalStateException("the replica did not acknowledge the master's writes");
      }
    }
  }

  /** Kills the master's process, as a crash would, and then {@link #promoteReplica()}. */
  public void failOver() {
    master.stop();
    promoteReplica();
  }

  /**
   * Has the Sentinel promote the replica at once ({@code SENTINEL FAILOVER}, repeated while the
   * Sentinel finds no replica to promote yet), then waits until the Sentinel names the replica as
   * master and the replica reports that role.
   */
  public void promoteReplica() {
    await("the Sentinel accepts a failover", () -> {
      try {
        sentinelCommands.failover(MASTER_NAME);
        return true;
      } catch (RedisException e) {
        // NOGOODSLAVE until the Sentinel's view of the replica is fresh; INPROG if it started one
        return e.getMessage() != null && e.getMessage().startsWith("INPROG");
      }
    });
    await("the Sentinel names the replica as master", () -> currentMasterPort() == replica.port()
        && replicaInfo().contains("role:master"));
  }

  @Override
  public void close() {
    admin.shutdown();
    sentinel.close();
    replica.close();
    master.close();
  }

  private boolean replicaReady() {
    List<Map<String, String>> replicas = sentinelCommands.replicas(MASTER_NAME);
    return replicas.size() == 1
        && "slave".equals(replicas.get(0).get("flags"))
        && "ok".equals(replicas.get(0).get("master-link-status"))
        && Integer.toString(replica.port()).equals(replicas.get(0).get("port"))
        && replicaInfo().contains("master_link_status:up");
  }

  private String replicaInfo() {
    try (StatefulRedisConnection<String, String> c = admin.connect(replica.uri())) {
      return c.sync().info("replication");
    }
  }

  /**
   * Waits, at most 30 s, until {@code condition} holds: the bound on a failover and on a client's
   * reconnection after it.
   *
   * @param what the condition, for the failure's message
   * @param condition the condition
   * @throws IllegalStateException if it did not hold within 30 s
   */
  public static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("timed out after " + WAIT + " waiting until " + what
            + "; see the logs under target/redis-server");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // bounded wait on a condition
    }
  }
}
