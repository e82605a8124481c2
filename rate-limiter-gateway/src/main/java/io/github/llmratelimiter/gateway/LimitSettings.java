package io.github.llmratelimiter.gateway;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The limits one level of configuration sets: the top level, a policy or a model of a policy. A
 * {@code null} value is not set there and is inherited: a model's from its policy, a policy's from
 * the top level ({@link RateLimitSettings}). Values are checked when the policies are resolved
 * ({@link RateLimitPolicies#from}), which names the property of an invalid one.
 *
 * @param rpmLimit requests admitted per window and key ({@code rpm.limit})
 * @param rpmWindow the request window's length ({@code rpm.window})
 * @param burstCapacity tokens the bucket holds when full ({@code burst.capacity}); with neither this
 *     nor {@code burstRefillPerSecond} set at any level there is no bucket
 * @param burstRefillPerSecond tokens regained per second ({@code burst.refill-per-second})
 * @param tpmLimit model tokens admitted per window and key ({@code tpm.limit}); unset at every level
 *     means no model-token budget
 * @param tpmWindow the model-token window's length ({@code tpm.window})
 * @param concurrencyLimit calls of a key in flight at once ({@code concurrency.limit}); unset at
 *     every level means no limit on calls in flight
 * @param concurrencyLeaseTimeout the longest a call holds its slot ({@code
 *     concurrency.lease-timeout}), after which the slot is free even if the call never ended
 */
public record LimitSettings(
    @Nullable Long rpmLimit,
    @Nullable Duration rpmWindow,
    @Nullable Double burstCapacity,
    @Nullable Double burstRefillPerSecond,
    @Nullable Long tpmLimit,
    @Nullable Duration tpmWindow,
    @Nullable Long concurrencyLimit,
    @Nullable Duration concurrencyLeaseTimeout) {

  /** No value set: everything is inherited. */
  public static final LimitSettings NONE = new LimitSettings(null, null, null, null, null, null);

  /**
   * Returns limits without a setting on calls in flight.
   *
   * @param rpmLimit requests admitted per window and key
   * @param rpmWindow the request window's length
   * @param burstCapacity tokens the bucket holds when full
   * @param burstRefillPerSecond tokens regained per second
   * @param tpmLimit model tokens admitted per window and key
   * @param tpmWindow the model-token window's length
   */
  public LimitSettings(@Nullable Long rpmLimit, @Nullable Duration rpmWindow,
      @Nullable Double burstCapacity, @Nullable Double burstRefillPerSecond,
      @Nullable Long tpmLimit, @Nullable Duration tpmWindow) {
    this(rpmLimit, rpmWindow, burstCapacity, burstRefillPerSecond, tpmLimit, tpmWindow, null, null);
  }

  /**
   * Returns these settings with the request window's values replaced.
   *
   * @param limit requests per window, or {@code null} to inherit
   * @param window the window, or {@code null} to inherit
   * @return the new settings
   */
  public LimitSettings withRpm(@Nullable Long limit, @Nullable Duration window) {
    return new LimitSettings(limit, window, burstCapacity, burstRefillPerSecond, tpmLimit, tpmWindow,
        concurrencyLimit, concurrencyLeaseTimeout);
  }

  /**
   * Returns these settings with the bucket's values replaced.
   *
   * @param capacity the bucket's capacity, or {@code null} to inherit
   * @param refillPerSecond its refill rate, or {@code null} to inherit
   * @return the new settings
   */
  public LimitSettings withBurst(@Nullable Double capacity, @Nullable Double refillPerSecond) {
    return new LimitSettings(rpmLimit, rpmWindow, capacity, refillPerSecond, tpmLimit, tpmWindow,
        concurrencyLimit, concurrencyLeaseTimeout);
  }

  /**
   * Returns these settings with the model-token window's values replaced.
   *
   * @param limit model tokens per window, or {@code null} to inherit
   * @param window the window, or {@code null} to inherit
   * @return the new settings
   */
  public LimitSettings withTpm(@Nullable Long limit, @Nullable Duration window) {
    return new LimitSettings(rpmLimit, rpmWindow, burstCapacity, burstRefillPerSecond, limit, window,
        concurrencyLimit, concurrencyLeaseTimeout);
  }

  /**
   * Returns these settings with the limit on calls in flight replaced.
   *
   * @param limit calls of a key in flight at once, or {@code null} to inherit
   * @param leaseTimeout the longest a call holds its slot, or {@code null} to inherit
   * @return the new settings
   */
  public LimitSettings withConcurrency(@Nullable Long limit, @Nullable Duration leaseTimeout) {
    return new LimitSettings(rpmLimit, rpmWindow, burstCapacity, burstRefillPerSecond, tpmLimit,
        tpmWindow, limit, leaseTimeout);
  }
}
