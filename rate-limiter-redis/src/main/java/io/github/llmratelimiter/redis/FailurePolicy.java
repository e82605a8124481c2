package io.github.llmratelimiter.redis;

/**
 * What a {@link RedisRateLimitStore} answers while Redis does not (an error, or no reply within
 * the command timeout). Bad input is rejected with an {@link IllegalArgumentException} whatever
 * the policy.
 */
public enum FailurePolicy {

  /**
   * Admit every call: availability over limits. The decision is an allow with {@code remaining}
   * and {@code resetAfterMs} 0, naming the root level.
   */
  FAIL_OPEN,

  /**
   * Deny every call: limits over availability. The decision is a retryable deny with {@code
   * remaining} 0 whose {@code retryAfterMs} is the store's retry interval, naming the root level
   * and carrying {@link io.github.llmratelimiter.core.Reason#STORE_UNAVAILABLE}; nothing is
   * charged.
   */
  FAIL_CLOSED,

  /**
   * Decide on an in-memory store inside this process until Redis answers again: each gateway
   * instance then enforces the limits on its own (so the instances together may admit up to N
   * times a limit), and what it counted is dropped when Redis is back.
   */
  LOCAL_FALLBACK
}
