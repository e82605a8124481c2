package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Ticker;
import io.lettuce.core.RedisException;
import io.lettuce.core.cluster.SlotHash;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The slots this instance holds on Redis for its calls in flight, kept alive. A slot on Redis
 * expires one slot lease after it was taken or last renewed (and at its lease timeout at the
 * latest), so a slot whose holder died, or whose release never reached Redis, frees itself within
 * one slot lease; this renews every slot of this instance's calls still in flight every third of
 * the slot lease, all at once: one {@code renew.lua} call in all on a standalone server (or
 * Sentinel), one per Redis Cluster hash slot that holds some of them on a Cluster.
 *
 * <p>A call's slots are tracked from its admission until its release ({@link #forget}, before the
 * release is sent, so a release that is lost still ends the renewals), or until its lease timeout
 * has passed on the store's ticker. Renewals go through the circuit breaker like every call (on a
 * Cluster, that of the master serving their hash slot): none is sent while it is open. A renewal
 * renews only slots that still count: a slot that expired while Redis was out of reach (an outage
 * longer than the slot lease) is not taken again when Redis answers; the call then holds no slot
 * on Redis for the rest of its run (its mirror in the local fallback still counts it).
 */
final class SlotRenewal {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  /** A reservation made on Redis: its root key and its id, numbered per root key. */
  private record Held(String rootKey, long id) {
    static Held of(Reservation reservation) {
      return new Held(reservation.keys().get(0), reservation.id());
    }
  }

  /** A call's slots keys, and the ticker time when its lease timeout has passed. */
  private record Slots(String[] keys, long until) {}

  private final LuaRateLimitStore redis;
  private final RedisMasters masters;
  private final Ticker ticker;
  private final long intervalMs;
  private final ConcurrentHashMap<Held, Slots> live = new ConcurrentHashMap<>();

  SlotRenewal(LuaRateLimitStore redis, RedisMasters masters, Ticker ticker, Duration slotLease) {
    this.redis = redis;
    this.masters = masters;
    this.ticker = ticker;
    this.intervalMs = Math.max(1, slotLease.toMillis() / 3);
  }

  /** Renews the tracked slots every third of the slot lease on {@code timer}. */
  void start(ScheduledExecutorService timer) {
    timer.scheduleWithFixedDelay(() -> {
      try {
        renew();
      } catch (RuntimeException e) { // an escaped exception would end the renewals for good
        LOG.log(Level.WARNING, "Redis rate-limit store slot renewal failed", e);
      }
    }, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
  }

  /** Tracks the slots of a call Redis admitted, until it is released or its lease timeout passes. */
  void track(Reservation admitted) {
    long lease = 0;
    for (Budget b : admitted.levels()) {
      ConcurrencyLimit c = b.concurrency();
      lease = Math.max(lease, c == null ? 0 : c.leaseTimeout().toNanos());
    }
    live.put(Held.of(admitted), new Slots(redis.slotKeys(admitted), ticker.read() + lease));
  }

  /** Stops renewing a reservation's slots (it is being released); idempotent. */
  void forget(Reservation reservation) {
    live.remove(Held.of(reservation));
  }

  /** The calls whose slots are renewed (for tests). */
  int tracked() {
    return live.size();
  }

  /**
   * Renews every tracked slot now, as the timer does at every interval: one script call per group
   * of keys (see the class comment), each with the permission of the circuit breaker of the master
   * that serves its hash slot. Never blocks.
   *
   * @return a future that completes once every renewal is answered or has failed
   */
  CompletableFuture<Void> renew() {
    long now = ticker.read();
    live.values().removeIf(s -> now - s.until() >= 0);
    if (live.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    boolean cluster = redis.cluster();
    Map<Integer, Map<String, List<Long>>> groups = new HashMap<>();
    for (Map.Entry<Held, Slots> e : live.entrySet()) {
      for (String key : e.getValue().keys()) {
        groups.computeIfAbsent(cluster ? SlotHash.getSlot(key) : 0, g -> new LinkedHashMap<>())
            .computeIfAbsent(key, k -> new ArrayList<>()).add(e.getKey().id());
      }
    }
    List<CompletableFuture<Void>> sent = new ArrayList<>(groups.size());
    for (Map.Entry<Integer, Map<String, List<Long>>> slot : groups.entrySet()) {
      Map<String, List<Long>> group = slot.getValue();
      String[] keys = group.keySet().toArray(String[]::new);
      long[][] ids = new long[keys.length][];
      for (int i = 0; i < keys.length; i++) {
        ids[i] = group.get(keys[i]).stream().mapToLong(Long::longValue).toArray();
      }
      sent.add(send(cluster ? masters.forSlot(slot.getKey()) : masters.single(), keys, ids));
    }
    return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
  }

  private CompletableFuture<Void> send(RedisMasters.Master master, String[] keys, long[][] ids) {
    RedisBreaker breaker = master.breaker();
    if (!breaker.tryAcquirePermission()) {
      return CompletableFuture.completedFuture(null);
    }
    long start = System.nanoTime();
    CompletableFuture<Long> sent;
    try {
      sent = redis.submitRenew(keys, ids);
    } catch (RedisException e) {
      breaker.failed(e, start);
      return CompletableFuture.completedFuture(null);
    } catch (RuntimeException e) {
      breaker.releasePermission();
      LOG.log(Level.WARNING, "Redis rate-limit store slot renewal failed", e);
      return CompletableFuture.completedFuture(null);
    }
    return master.replies().within(sent, start).handle((renewed, failure) -> {
      if (failure != null) {
        breaker.failed(Replies.redisException(failure), start);
      } else {
        breaker.succeeded(start);
      }
      return null;
    });
  }
}
