package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * Liveness both ways between one store and Redis: the store marks its instance live in Redis at a
 * fixed interval (the live count sizes the fallback's shares), and a health check asks whether
 * Redis answers a {@code PING}. Both count for the circuit breaker of the master they reach: the
 * heartbeat for the master that serves the live-instance set (one key), the health check for every
 * master of a Cluster, each sent its own {@code PING}.
 */
final class RedisHeartbeat {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  /** The longest a health check's {@code PING} waits, in milliseconds. */
  static final long PING_MILLIS = 300;

  private final LuaRateLimitStore redis;
  private final RedisMasters masters;
  /** The live-instance set's key, whose master answers the heartbeats. */
  private final String instancesKey;
  private final @Nullable FallbackStore fallback;
  private final ScheduledExecutorService timer;
  private final long instanceId = ThreadLocalRandom.current().nextLong(1L << 52);
  private final long heartbeatMs;
  private final long heartbeatTtlMs;
  private final long pingMillis;

  RedisHeartbeat(LuaRateLimitStore redis, RedisMasters masters, @Nullable FallbackStore fallback,
      Duration heartbeatInterval, ScheduledExecutorService timer) {
    this.redis = redis;
    this.masters = masters;
    this.instancesKey = redis.instancesKey();
    this.fallback = fallback;
    this.timer = timer;
    this.heartbeatMs = heartbeatInterval.toMillis();
    this.heartbeatTtlMs = 3 * heartbeatMs;
    this.pingMillis = Math.max(1, Math.min(PING_MILLIS,
        TimeUnit.NANOSECONDS.toMillis(redis.replies().silenceNanos())));
  }

  /**
   * A new timer for a store: one daemon thread that sends the heartbeats and checks the calls
   * that wait for Redis (see {@link Replies}).
   */
  static ScheduledExecutorService newTimer() {
    ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "ratelimiter-redis-timer");
      t.setDaemon(true);
      return t;
    });
    executor.setRemoveOnCancelPolicy(true);
    return executor;
  }

  /**
   * Connects and loads the scripts, waiting up to {@code wait}, then starts the heartbeats; a
   * failure opens the circuit breaker of every master known then (the one state until a Cluster's
   * topology is known), since Redis is known to be unavailable.
   */
  void start(Duration wait) {
    try {
      redis.warmUp(wait);
      beat().join();
    } catch (RedisException e) {
      masters.single().breaker().failed(e, 0);
      masters.openAll();
    }
    timer.scheduleWithFixedDelay(this::beat, heartbeatMs, heartbeatMs, TimeUnit.MILLISECONDS);
  }

  /**
   * Marks this instance live in Redis and takes the live count for the fallback's shares; a
   * failure counts for the circuit breaker like any call. Never blocks (it runs on the timer that
   * also checks the waiting calls).
   *
   * @return a future that completes once the heartbeat is answered or has failed
   */
  CompletableFuture<Void> beat() {
    RedisMasters.Master master = masters.forKey(instancesKey);
    RedisBreaker breaker = master.breaker();
    if (!breaker.tryAcquirePermission()) {
      return CompletableFuture.completedFuture(null);
    }
    long start = System.nanoTime();
    CompletableFuture<Long> sent;
    try {
      sent = redis.heartbeat(instanceId, heartbeatTtlMs);
    } catch (RedisException e) {
      breaker.failed(e, start);
      return CompletableFuture.completedFuture(null);
    } catch (RuntimeException e) {
      breaker.releasePermission();
      LOG.log(Level.WARNING, "Redis rate-limit store heartbeat failed", e);
      return CompletableFuture.completedFuture(null);
    }
    return master.replies().within(sent, start).handle((live, failure) -> {
      if (failure != null) {
        breaker.failed(Replies.redisException(failure), start);
      } else {
        breaker.succeeded(start);
        if (fallback != null) {
          fallback.instances((int) Math.min(Integer.MAX_VALUE, live));
        }
      }
      return null;
    });
  }

  /**
   * Sends a {@code PING} to every master at once (the one server off a Cluster), waiting at most
   * the shorter of the command timeout and {@value #PING_MILLIS} ms in all; an answer while a
   * master's circuit breaker is open lets its probe calls through at once.
   *
   * @return whether every master answered
   */
  boolean ping() {
    List<RedisMasters.Master> all = masters.current();
    List<CompletableFuture<String>> sent = new ArrayList<>(all.size());
    for (RedisMasters.Master m : all) {
      try {
        sent.add(redis.ping(m));
      } catch (RuntimeException e) {
        sent.add(CompletableFuture.failedFuture(e));
      }
    }
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pingMillis);
    boolean every = true;
    for (int i = 0; i < all.size(); i++) {
      try {
        sent.get(i).get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
        all.get(i).breaker().probeNow();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } catch (ExecutionException | TimeoutException | RuntimeException e) {
        every = false;
      }
    }
    return every;
  }
}
