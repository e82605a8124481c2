package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Ticker;
import io.lettuce.core.RedisException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The public store: {@link LuaRateLimitStore} behind the failure policy.
 *
 * <p>A failed Redis call (an error, or no reply within the command timeout) is counted, logged
 * without keys on the first failure of an outage, and answered by the policy; for the retry
 * interval after it every call is answered by the policy without waiting on Redis. Then one caller
 * at a time probes Redis with its real call; the first answer ends the outage.
 */
final class GuardedRedisStore implements RedisRateLimitStore {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  private final LuaRateLimitStore redis;
  private final FailurePolicy policy;
  private final @Nullable RateLimitStore fallback;
  private final Ticker clock;
  private final long retryNanos;
  private final long retryMs;
  private final LongAdder errors = new LongAdder();
  private final AtomicBoolean probing = new AtomicBoolean();
  private volatile boolean down;
  private volatile long retryAt;

  GuardedRedisStore(LuaRateLimitStore redis, FailurePolicy policy, Duration retryInterval, Ticker clock) {
    this.redis = redis;
    this.policy = policy;
    this.fallback = policy == FailurePolicy.LOCAL_FALLBACK ? RateLimitStore.inMemory(clock) : null;
    this.clock = clock;
    this.retryNanos = retryInterval.toNanos();
    this.retryMs = Math.max(1, retryInterval.toMillis());
  }

  /** Connects and loads the scripts, waiting up to {@code wait}; a failure starts an outage. */
  void warmUp(Duration wait) {
    try {
      redis.warmUp(wait);
    } catch (RedisException e) {
      failed(e);
    }
  }

  @Override
  public Decision acquire(
      List<Budget> levels, List<String> keys, double cost, Composition composition) {
    return decide(redis.plan(levels, keys, cost, composition)).decision();
  }

  @Override
  public Decision acquire(Budget budget, String key, double cost, Composition composition) {
    return decide(redis.plan(budget, key, cost, composition)).decision();
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      long estimatedModelTokens, Composition composition) {
    return decide(redis.planReserve(levels, keys, cost, estimatedModelTokens, composition));
  }

  /**
   * Reconciles on Redis a reservation Redis made, and on the fallback one the fallback made. A
   * reconciliation that cannot reach Redis is lost (and counted as an error).
   */
  @Override
  public void reconcile(Reservation reservation, long actualModelTokens) {
    if (!redis.planReconcile(reservation, actualModelTokens)) {
      return;
    }
    if (!LuaRateLimitStore.fromRedis(reservation)) {
      if (fallback != null) {
        fallback.reconcile(reservation, actualModelTokens);
      }
      return;
    }
    if (mayAsk()) {
      try {
        redis.executeReconcile(reservation, actualModelTokens);
        answered();
      } catch (RedisException e) {
        failed(e);
      }
    }
  }

  private Reservation decide(LuaRateLimitStore.Call call) {
    if (call.decided() != null) {
      return call.decidedReservation();
    }
    if (!mayAsk()) {
      return outage(call);
    }
    try {
      Reservation r = redis.execute(call);
      answered();
      return r;
    } catch (RedisException e) {
      failed(e);
      return outage(call);
    }
  }

  private Reservation outage(LuaRateLimitStore.Call call) {
    String root = call.levels().get(0).name();
    Decision d;
    switch (policy) {
      case FAIL_OPEN:
        d = Decision.allow(0, 0, root);
        break;
      case FAIL_CLOSED:
        d = Decision.retryableDeny(Reason.STORE_UNAVAILABLE, 0, retryMs, 0, root);
        break;
      default:
        if (call.reserve()) {
          return fallback().reserve(call.levels(), call.keys(), call.cost(), call.estimate(),
              call.composition());
        }
        d = fallback().acquire(call.levels(), call.keys(), call.cost(), call.composition());
    }
    return new Reservation(d, call.levels(), call.keys(), call.estimate(), 0, 0, 0);
  }

  /** Whether this call may ask Redis: always when healthy, else one probe per retry interval. */
  private boolean mayAsk() {
    if (!down) {
      return true;
    }
    return clock.read() - retryAt >= 0 && probing.compareAndSet(false, true);
  }

  private void answered() {
    if (down) {
      down = false;
      probing.set(false);
      LOG.log(Level.INFO, "Redis rate-limit store answers again: decisions are shared again");
    }
  }

  private void failed(RedisException e) {
    errors.increment();
    retryAt = clock.read() + retryNanos;
    boolean wasDown = down;
    down = true;
    probing.set(false);
    // Lettuce's messages name the failure (timeout, refused connection, server error), never keys.
    String what = e.getClass().getSimpleName() + ": " + e.getMessage();
    if (wasDown) {
      LOG.log(Level.DEBUG, "Redis rate-limit store still unavailable ({0})", what);
    } else {
      LOG.log(Level.WARNING,
          "Redis rate-limit store unavailable ({0}); failure policy {1} answers, Redis is asked"
              + " again in {2} ms", what, policy, Long.toString(retryNanos / 1_000_000));
    }
  }

  private RateLimitStore fallback() {
    RateLimitStore f = fallback;
    if (f == null) {
      throw new IllegalStateException("no fallback store under policy " + policy);
    }
    return f;
  }

  /**
   * Monitoring calls, under the same outage rules as decisions: during an outage the fallback
   * answers if there is one, else they throw.
   */
  private <T> T admin(Supplier<T> onRedis, Supplier<T> onFallback) {
    if (!mayAsk()) {
      if (fallback != null) {
        return onFallback.get();
      }
      throw new IllegalStateException("the Redis rate-limit store is unavailable");
    }
    try {
      T t = onRedis.get();
      answered();
      return t;
    } catch (RedisException e) {
      failed(e);
      if (fallback != null) {
        return onFallback.get();
      }
      throw new IllegalStateException(
          "the Redis rate-limit store is unavailable (" + e.getClass().getSimpleName() + ")", e);
    }
  }

  @Override
  public Optional<KeySnapshot> inspect(Budget budget, String key) {
    Checks.notBlank("key", key);
    redis.budget(budget);
    return admin(() -> redis.inspect(budget, key), () -> fallback().inspect(budget, key));
  }

  @Override
  public List<KeySnapshot> top(Budget budget, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
    }
    redis.budget(budget);
    return admin(() -> redis.top(budget, limit), () -> fallback().top(budget, limit));
  }

  @Override
  public boolean reset(Budget budget, String key) {
    Checks.notBlank("key", key);
    redis.budget(budget);
    return admin(() -> redis.reset(budget, key), () -> fallback().reset(budget, key));
  }

  @Override
  public long trackedKeys(Budget budget) {
    redis.budget(budget);
    return admin(() -> redis.trackedKeys(budget), () -> fallback().trackedKeys(budget));
  }

  @Override
  public long errorCount() {
    return errors.sum();
  }

  @Override
  public boolean degraded() {
    return down;
  }

  @Override
  public boolean ping() {
    try {
      redis.ping();
      answered();
      return true;
    } catch (RedisException e) {
      return false;
    }
  }

  @Override
  public FailurePolicy failurePolicy() {
    return policy;
  }

  @Override
  public void close() {
    redis.close();
    if (fallback != null) {
      fallback.close();
    }
  }
}
