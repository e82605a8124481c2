package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.Duration;

/**
 * A limit on the calls of a key in flight at once (LiteLLM's {@code max_parallel_requests}): an
 * admitted call holds one slot from its admission until it is {@linkplain RateLimitStore#release
 * released}, or until its lease expires, {@code leaseTimeout} after its admission on the store's
 * clock: a last-resort cap, so that a caller that crashed never holds a key's slots for longer. A
 * store shared by several processes may free a slot sooner once the process that holds it stops
 * renewing it (the Redis store's slot lease).
 *
 * <p>Only {@link RateLimitStore#reserve} takes slots, since only its {@link Reservation} can give
 * them back; {@link RateLimitStore#acquire} rejects a budget with this limit.
 *
 * @param limit the most calls in flight at once, at least 1
 * @param leaseTimeout how long a slot is held at most, positive and at most {@link #MAX_LEASE}
 */
public record ConcurrencyLimit(long limit, Duration leaseTimeout) {

  /** The default lease: ten minutes, longer than any LLM call a gateway lets run. */
  public static final Duration DEFAULT_LEASE_TIMEOUT = Duration.ofMinutes(10);

  /** The longest lease: one day. */
  public static final Duration MAX_LEASE = Duration.ofDays(1);

  /**
   * Validates the limit.
   *
   * @throws IllegalArgumentException if {@code limit} is below 1 or above {@code 2^31 - 9}, or
   *     {@code leaseTimeout} is null, not positive or longer than {@link #MAX_LEASE}
   */
  public ConcurrencyLimit {
    Args.positive("limit", limit);
    if (limit > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(
          "limit must be <= " + (Integer.MAX_VALUE - 8) + ", but was " + limit);
    }
    Args.positive("leaseTimeout", leaseTimeout);
    if (leaseTimeout.compareTo(MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "leaseTimeout must be at most " + MAX_LEASE + ", but was " + leaseTimeout);
    }
  }

  /**
   * Returns a limit of {@code limit} calls in flight with the default lease of ten minutes.
   *
   * @param limit the most calls in flight at once, at least 1
   * @return the limit
   * @throws IllegalArgumentException if {@code limit} is out of range
   */
  public static ConcurrencyLimit of(long limit) {
    return new ConcurrencyLimit(limit, DEFAULT_LEASE_TIMEOUT);
  }
}
