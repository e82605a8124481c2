package io.github.llmratelimiter.autoconfigure.redis;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.DeprecatedConfigurationProperty;

/**
 * Configuration of the Redis store, under the prefix {@code ratelimiter.redis} (used when {@code
 * ratelimiter.store} is redis); its connection is the application's {@code spring.data.redis.*}
 * one.
 */
@ConfigurationProperties("ratelimiter.redis")
public class RateLimiterRedisProperties {

  /** The prefix of every Redis key; instances that share it share their budgets. */
  private String keyPrefix = "rl";

  /**
   * How long Redis may answer nothing while a request waits for it before the failure policy
   * answers that request: a request queued behind a burst keeps waiting while Redis answers the
   * requests before it (up to max-wait). A health check's PING waits at most the shorter of
   * this and 300ms.
   */
  private Duration commandTimeout = Duration.ofSeconds(1);

  /**
   * The longest a request waits for Redis in all, however busy Redis is; a call that Redis runs
   * after this charges nothing there. Unset: 5s, or the command timeout if that is longer.
   */
  private @Nullable Duration maxWait;

  /**
   * How often this instance marks itself live in Redis; under local-fallback each instance takes
   * its share of every limit from the count of live instances.
   */
  private Duration heartbeatInterval = Duration.ofSeconds(1);

  /**
   * How long a slot taken on Redis for a call in flight (a policy's concurrency.limit) counts
   * without being renewed; each instance renews the slots of its calls still in flight every third
   * of this, in one Redis script per interval (one per hash slot on a Cluster). A call keeps its
   * slot for as long as it runs, up to its concurrency.lease-timeout (the last-resort cap); the
   * slots of an instance that crashed, or whose release never reached Redis, free themselves
   * within this long. At most a day; keep it well above the command timeout.
   */
  private Duration slotLease = Duration.ofSeconds(5);

  /** When Redis counts as unavailable, so that the failure policy answers every request. */
  private final CircuitBreaker circuitBreaker = new CircuitBreaker();

  /**
   * What answers while Redis does not: "fail-open" (admit every call), "fail-closed" (deny with
   * a 503) or "local-fallback" (an in-memory store in this instance decides). Unset: what
   * ratelimiter.store-failure says, which replaces this property.
   */
  private @Nullable FailurePolicy failurePolicy;

  /**
   * How long the failure policy answers every request once the circuit breaker has opened,
   * before probe requests ask Redis again.
   */
  private Duration retryInterval = Duration.ofSeconds(1);

  /**
   * Whether API keys and other limiter keys are hashed (SHA-256) in Redis key names, so that
   * they never appear there in clear; false keeps them readable.
   */
  private boolean hashKeys = true;

  /**
   * Whether the store's Redis commands are traced with the tracing of the application's Lettuce
   * resources (Spring Boot's Micrometer observations: a "lettuce.command" timer and span per
   * command). Off by default: every decision is a command, and the limiter times its decisions
   * itself (ratelimiter.decision.latency).
   */
  private boolean traceCommands;

  public String getKeyPrefix() {
    return keyPrefix;
  }

  public void setKeyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
  }

  public Duration getCommandTimeout() {
    return commandTimeout;
  }

  public void setCommandTimeout(Duration commandTimeout) {
    this.commandTimeout = commandTimeout;
  }

  public @Nullable Duration getMaxWait() {
    return maxWait;
  }

  public void setMaxWait(@Nullable Duration maxWait) {
    this.maxWait = maxWait;
  }

  public Duration getHeartbeatInterval() {
    return heartbeatInterval;
  }

  public void setHeartbeatInterval(Duration heartbeatInterval) {
    this.heartbeatInterval = heartbeatInterval;
  }

  public Duration getSlotLease() {
    return slotLease;
  }

  public void setSlotLease(Duration slotLease) {
    this.slotLease = slotLease;
  }

  public CircuitBreaker getCircuitBreaker() {
    return circuitBreaker;
  }

  @Deprecated(since = "0.1.0")
  @DeprecatedConfigurationProperty(replacement = "ratelimiter.store-failure", since = "0.1.0",
      reason = "one setting says what a store failure does, on every store: fail-open is allow,"
          + " fail-closed is deny, local-fallback is local-fallback")
  public @Nullable FailurePolicy getFailurePolicy() {
    return failurePolicy;
  }

  @Deprecated(since = "0.1.0")
  public void setFailurePolicy(@Nullable FailurePolicy failurePolicy) {
    this.failurePolicy = failurePolicy;
  }

  public Duration getRetryInterval() {
    return retryInterval;
  }

  public void setRetryInterval(Duration retryInterval) {
    this.retryInterval = retryInterval;
  }

  public boolean isTraceCommands() {
    return traceCommands;
  }

  public void setTraceCommands(boolean traceCommands) {
    this.traceCommands = traceCommands;
  }

  public boolean isHashKeys() {
    return hashKeys;
  }

  public void setHashKeys(boolean hashKeys) {
    this.hashKeys = hashKeys;
  }

  /** What answers while Redis does not. */
  public enum FailurePolicy {
    /** Admit every call. */
    FAIL_OPEN,
    /** Deny every call with a 503 problem response and a Retry-After of the retry interval. */
    FAIL_CLOSED,
    /** An in-memory store in this instance decides until Redis answers again. */
    LOCAL_FALLBACK
  }

  /**
   * The circuit breaker that decides when Redis counts as unavailable: it opens when at least
   * failure-rate-threshold percent of the last sliding-window-size requests failed (counted once
   * minimum-number-of-calls were made); after retry-interval, permitted-calls-in-half-open-state
   * probe requests decide whether it closes again.
   */
  public static class CircuitBreaker {

    /** The failure rate, in percent (above 0, at most 100), at which the breaker opens. */
    private float failureRateThreshold = 50;

    /** How many of the most recent requests the failure rate is taken over. */
    private int slidingWindowSize = 20;

    /** How many requests the breaker needs before it computes a failure rate. */
    private int minimumNumberOfCalls = 10;

    /** How many probe requests go to Redis after the retry interval. */
    private int permittedCallsInHalfOpenState = 3;

    public float getFailureRateThreshold() {
      return failureRateThreshold;
    }

    public void setFailureRateThreshold(float failureRateThreshold) {
      this.failureRateThreshold = failureRateThreshold;
    }

    public int getSlidingWindowSize() {
      return slidingWindowSize;
    }

    public void setSlidingWindowSize(int slidingWindowSize) {
      this.slidingWindowSize = slidingWindowSize;
    }

    public int getMinimumNumberOfCalls() {
      return minimumNumberOfCalls;
    }

    public void setMinimumNumberOfCalls(int minimumNumberOfCalls) {
      this.minimumNumberOfCalls = minimumNumberOfCalls;
    }

    public int getPermittedCallsInHalfOpenState() {
      return permittedCallsInHalfOpenState;
    }

    public void setPermittedCallsInHalfOpenState(int permittedCallsInHalfOpenState) {
      this.permittedCallsInHalfOpenState = permittedCallsInHalfOpenState;
    }
  }
}
