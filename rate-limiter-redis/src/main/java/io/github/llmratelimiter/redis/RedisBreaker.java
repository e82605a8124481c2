package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.lettuce.core.RedisException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The circuit breaker (Resilience4j) in front of one Redis server of a store (a standalone server,
 * a Sentinel's master, or one master of a Cluster: see {@link RedisMasters}), and the count of the
 * calls that failed. It opens when the failure rate over the last calls to that server reaches its
 * threshold; while it is open, nothing is asked of that server until the retry interval has passed,
 * and then a few probe calls decide whether it closes again.
 */
final class RedisBreaker {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  private final CircuitBreaker breaker;
  private final LongAdder errors;

  /** The circuit breaker's settings. */
  record Settings(float failureRateThreshold, int slidingWindowSize,
      int minimumNumberOfCalls, int permittedCallsInHalfOpenState) {}

  /**
   * A breaker in front of one server, with the store's settings.
   *
   * @param master the address of the Cluster master it guards, or empty for the only server
   * @param errors where its failed calls are counted (shared by the masters of one store)
   */
  RedisBreaker(String master, Settings settings, Duration retryInterval, FailurePolicy policy,
      Ticker clock, LongAdder errors) {
    this.errors = errors;
    long retryMs = Math.max(1, retryInterval.toMillis());
    this.breaker = CircuitBreaker.of(master.isEmpty() ? "ratelimiter-redis"
        : "ratelimiter-redis-" + master, CircuitBreakerConfig.custom()
        .failureRateThreshold(settings.failureRateThreshold())
        // Resilience4j's locked window: its lock-free one loses its head when a window holds one
        // call (a half-open state with one probe, or a sliding window of 1) and then fails every
        // record. The lock is held for a few counters' update; a breaker's replies are recorded
        // on its connection's one event loop, so it is rarely contended.
        .slidingWindow(settings.slidingWindowSize(), settings.minimumNumberOfCalls(),
            CircuitBreakerConfig.SlidingWindowType.COUNT_BASED,
            CircuitBreakerConfig.SlidingWindowSynchronizationStrategy.SYNCHRONIZED)
        .permittedNumberOfCallsInHalfOpenState(settings.permittedCallsInHalfOpenState())
        .waitDurationInOpenState(retryInterval)
        .recordException(e -> true)
        .clock(new TickerClock(clock))
        .build());
    breaker.getEventPublisher().onStateTransition(e -> {
      switch (e.getStateTransition().getToState()) {
        case OPEN -> {
          if (master.isEmpty()) {
            LOG.log(Level.WARNING, "Redis rate-limit store unavailable; failure policy {0}"
                + " answers, Redis is asked again in {1} ms", policy, Long.toString(retryMs));
          } else {
            LOG.log(Level.WARNING, "Redis rate-limit store: Cluster master {0} unavailable;"
                + " failure policy {1} answers for the keys it serves, it is asked again in {2} ms",
                master, policy, Long.toString(retryMs));
          }
        }
        case CLOSED -> {
          if (master.isEmpty()) {
            LOG.log(Level.INFO,
                "Redis rate-limit store answers again: decisions are shared again");
          } else {
            LOG.log(Level.INFO, "Redis rate-limit store: Cluster master {0} answers again:"
                + " decisions on the keys it serves are shared again", master);
          }
        }
        default -> { }
      }
    });
  }

  /** Whether a call may go to Redis now; a permission taken must be answered or released. */
  boolean tryAcquirePermission() {
    return breaker.tryAcquirePermission();
  }

  /** Gives back a permission whose call never reached Redis (bad input, a bug). */
  void releasePermission() {
    breaker.releasePermission();
  }

  /** Records a call sent at {@code start} ({@code System.nanoTime()}) that Redis answered. */
  void succeeded(long start) {
    breaker.onSuccess(System.nanoTime() - start, TimeUnit.NANOSECONDS);
  }

  /**
   * Counts a failed call; one sent at {@code start} (not 0) also counts for the circuit breaker.
   */
  void failed(RedisException e, long start) {
    errors.increment();
    if (start != 0) {
      breaker.onError(System.nanoTime() - start, TimeUnit.NANOSECONDS, e);
    }
    // Lettuce's messages name the failure (timeout, refused connection, server error), never keys.
    LOG.log(Level.DEBUG, "Redis rate-limit store call failed ({0}: {1})",
        e.getClass().getSimpleName(), e.getMessage());
  }

  /** Opens the circuit breaker: Redis is known to be unavailable. */
  void open() {
    breaker.transitionToOpenState();
  }

  /** Lets the probe calls through at once when the breaker is open: Redis answered a check. */
  void probeNow() {
    if (breaker.getState() == CircuitBreaker.State.OPEN) {
      try {
        breaker.transitionToHalfOpenState();
      } catch (RuntimeException raced) {
        // another caller moved the breaker meanwhile: its state stands
      }
    }
  }

  /** Whether the breaker is other than closed: the failure policy answers (some) calls. */
  boolean degraded() {
    return breaker.getState() != CircuitBreaker.State.CLOSED;
  }


  /**
   * Runs a monitoring call under the breaker: while it is open, or when Redis fails, {@code
   * onFallback} answers if given, else an {@link IllegalStateException} is thrown.
   */
  <T> T call(Supplier<T> onRedis, @Nullable Supplier<T> onFallback) {
    if (!breaker.tryAcquirePermission()) {
      return unavailable(onFallback, null);
    }
    long start = System.nanoTime();
    try {
      T t = onRedis.get();
      succeeded(start);
      return t;
    } catch (RedisException e) {
      failed(e, start);
      return unavailable(onFallback, e);
    } catch (RuntimeException e) {
      breaker.releasePermission();
      throw e;
    }
  }

  /**
   * The answer of a monitoring call Redis did not answer: {@code onFallback}'s if given, else an
   * {@link IllegalStateException} (caused by {@code failure}, if any).
   */
  static <T> T unavailable(@Nullable Supplier<T> onFallback, @Nullable RedisException failure) {
    if (onFallback != null) {
      return onFallback.get();
    }
    if (failure == null) {
      throw new IllegalStateException("the Redis rate-limit store is unavailable");
    }
    throw new IllegalStateException("the Redis rate-limit store is unavailable ("
        + failure.getClass().getSimpleName() + ")", failure);
  }
}
