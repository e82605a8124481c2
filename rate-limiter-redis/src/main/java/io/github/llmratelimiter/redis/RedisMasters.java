package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisException;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The health of the store's Redis, one state per master: each master's silence clock ({@link
 * Replies}) and circuit breaker ({@link RedisBreaker}), so that a master that is frozen or failing
 * sends to the failure policy only the calls on the keys it serves.
 *
 * <p>A standalone server, or the master a Sentinel names, has one state. On a Cluster a call is
 * routed to the state of the master that serves its keys' hash slot as Lettuce's cluster connection
 * knows it ({@link Partitions#getMasterBySlot}), by node id: Lettuce updates its partitions on a
 * topology refresh (on a client the store creates: every 30 s, and at once on a {@code MOVED} or
 * {@code ASK} redirect, a reconnection or an unknown node), so a slot that moves, or a replica
 * promoted in its master's place, is routed to the state of its new master from then on, and the
 * states of nodes that serve no slot any more are dropped. Until the cluster connection is open the
 * calls share one more state, the one a standalone server has.
 *
 * <p>What spans masters goes by the aggregate: {@link #degraded()} while any master's breaker is
 * other than closed, {@link #errorCount()} the failed calls of every master, and a monitoring call
 * that reads every master ({@link #call}) runs only while every breaker is closed.
 */
final class RedisMasters {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  /**
   * One master's health: its silence clock and its circuit breaker; {@code id} its Cluster node id
   * and {@code name} its address (both empty for the only server).
   */
  record Master(String id, String name, Replies replies, RedisBreaker breaker) {}

  private final RedisLink link;
  private final Replies waits;
  private final Function<String, RedisBreaker> breakers;
  private final LongAdder errors;
  /** The only server's state; on a Cluster, the calls' state until the topology is known. */
  private final Master single;
  /** On a Cluster, each master's state by node id. */
  private final ConcurrentHashMap<String, Master> byId = new ConcurrentHashMap<>();

  /**
   * The masters of the Redis behind {@code link}: one state until a Cluster's topology is known.
   *
   * @param link the store's link to Redis
   * @param replies the waits of every master (the only server's silence clock; each Cluster master
   *     gets its own, with the same waits)
   * @param breakers a new circuit breaker for a master, from its name (empty for the only server),
   *     counting its failed calls into {@code errors}
   * @param errors the count of every master's failed calls
   */
  RedisMasters(RedisLink link, Replies replies, Function<String, RedisBreaker> breakers,
      LongAdder errors) {
    this.link = link;
    this.waits = replies;
    this.breakers = breakers;
    this.errors = errors;
    this.single = new Master("", "", replies, breakers.apply(""));
  }

  /** Whether the store's Redis is a Cluster, whose masters each have their own state. */
  boolean cluster() {
    return link.cluster();
  }

  /**
   * The state of a standalone server or a Sentinel's master; on a Cluster, the state of the calls
   * sent before the topology is known.
   */
  Master single() {
    return single;
  }

  /** The state of the master that serves {@code redisKey} (its hash slot on a Cluster). */
  Master forKey(String redisKey) {
    return link.cluster() ? forSlot(SlotHash.getSlot(redisKey)) : single;
  }

  /** The state of the master that serves hash slot {@code slot} (the only one off a Cluster). */
  Master forSlot(int slot) {
    Partitions partitions = link.partitions();
    if (partitions == null) {
      return single;
    }
    RedisClusterNode node = partitions.getMasterBySlot(slot);
    if (node == null || node.getNodeId() == null) {
      return single;
    }
    return of(node, partitions);
  }

  /**
   * The states of the masters now: every master that serves slots on a Cluster whose topology is
   * known, else the one state.
   */
  List<Master> current() {
    Partitions partitions = link.partitions();
    if (partitions == null) {
      return List.of(single);
    }
    List<Master> masters = new ArrayList<>();
    for (RedisClusterNode node : partitions) {
      if (!node.hasNoSlots() && node.getNodeId() != null && master(node)) {
        masters.add(of(node, partitions));
      }
    }
    return masters.isEmpty() ? List.of(single) : masters;
  }

  /** The node's state, added on first use (dropping those of nodes that serve no slot any more). */
  private Master of(RedisClusterNode node, Partitions partitions) {
    String id = node.getNodeId();
    Master known = byId.get(id);
    if (known != null) {
      return known;
    }
    Master added = byId.computeIfAbsent(id, k -> {
      String name = node.getUri() == null ? id
          : node.getUri().getHost() + ":" + node.getUri().getPort();
      return new Master(id, name, waits.sibling(), breakers.apply(name));
    });
    Set<String> serving = new HashSet<>();
    for (RedisClusterNode n : partitions) {
      if (!n.hasNoSlots() && n.getNodeId() != null) {
        serving.add(n.getNodeId());
      }
    }
    serving.add(id);
    byId.keySet().retainAll(serving);
    return added;
  }

  private static boolean master(RedisClusterNode node) {
    return node.is(RedisClusterNode.NodeFlag.UPSTREAM);
  }

  /** Whether any master's circuit breaker is other than closed: the policy answers some calls. */
  boolean degraded() {
    for (Master m : current()) {
      if (m.breaker().degraded()) {
        return true;
      }
    }
    return false;
  }

  /** How many calls to Redis failed, on every master. */
  long errorCount() {
    return errors.sum();
  }

  /** Opens the circuit breaker of every master known now: Redis is known to be unavailable. */
  void openAll() {
    for (Master m : current()) {
      m.breaker().open();
    }
  }

  /**
   * Runs a monitoring call that reads every master (a {@code SCAN} of each, say): off a Cluster
   * under the one breaker ({@link RedisBreaker#call}); on a Cluster only while every master's
   * breaker is closed, its failure counted as an error but for no master's breaker (it does not
   * say which master failed). While a breaker is not closed, or when Redis fails, {@code
   * onFallback} answers if given, else an {@link IllegalStateException} is thrown.
   */
  <T> T call(Supplier<T> onRedis, @Nullable Supplier<T> onFallback) {
    if (!link.cluster()) {
      return single.breaker().call(onRedis, onFallback);
    }
    if (degraded()) {
      return RedisBreaker.unavailable(onFallback, null);
    }
    try {
      return onRedis.get();
    } catch (RedisException e) {
      errors.increment();
      LOG.log(Level.DEBUG, "Redis rate-limit store call failed ({0}: {1})",
          e.getClass().getSimpleName(), e.getMessage());
      return RedisBreaker.unavailable(onFallback, e);
    }
  }
}
