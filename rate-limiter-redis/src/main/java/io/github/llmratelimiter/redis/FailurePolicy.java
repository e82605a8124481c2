package io.github.llmratelimiter.redis;

/**
 * What a {@link RedisRateLimitStore} answers for a call Redis does not answer (an error, or no
 * reply within the command timeout), and for every call while its circuit breaker is open. Bad
 * input is rejected with an {@link IllegalArgumentException} whatever the policy.
 *
 * <p>Whatever the policy, a call it answered is not also charged on Redis: a script that Redis runs
 * after the call's deadline (the longest wait after it was sent) charges nothing, and what a script
 * charged before it, whose reply came after the caller stopped waiting, is refunded when the reply
 * arrives (its slots for calls in flight included).
 *
 * <p>For a budget with a {@link io.github.llmratelimiter.core.ConcurrencyLimit}: {@code FAIL_OPEN}
 * admits without taking a slot anywhere (its reservation holds nothing to release); {@code
 * FAIL_CLOSED} denies; {@code LOCAL_FALLBACK} takes a slot of this instance's share. A release
 * that cannot reach Redis is lost, and the lease expires by itself.
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
   * Decide on an in-memory store inside this process: each gateway instance enforces its share of
   * every limit, continuing from what it admitted through Redis.
   *
   * <p>Each instance marks itself live in Redis every heartbeat interval; with {@code N} live
   * instances as last seen before the outage, an instance's share of a window limit {@code L} is
   * {@code s = max(1, floor(L / N))} (of a bucket, its capacity and refill over {@code N}, at least
   * one permit; of a model-token limit, {@code max(1, floor(limit / N))}; of a concurrency limit
   * {@code C}, {@code max(1, floor(C / N))} slots). While Redis answers, the instance also charges
   * its share with every call Redis admits, so in any window it admits through the fallback at
   * most its share less what it admitted through Redis, and a call admitted through Redis holds
   * its slot in the share until it is released. For one key, the instances together then admit, in
   * any window of length {@code w}:
   * <ul>
   *   <li>at most {@code N * s <= max(L, N)} when the window lies within the outage;
   *   <li>at most {@code L + (N - 1) * s} when the outage starts within it;
   *   <li>at most {@code L + N * s} when Redis comes back within it (what the fallback admitted is
   *       not written to Redis).
   * </ul>
   * Calls in flight, with a share {@code c} of a concurrency limit {@code C}: an instance admits
   * only while it holds fewer than {@code c} slots, those of its calls admitted through Redis
   * included, so together the instances hold at most {@code C + N * c} slots during the outage,
   * and at most {@code N * c <= max(C, N)} once the calls admitted through Redis before it have
   * ended; the calls the fallback admitted hold no slot on Redis once it answers again, so up to
   * {@code C + N * c} run at once until they end.
   * An instance that joins or leaves changes {@code N} for the others; shares for {@code N - 1}
   * and {@code N + 1} are kept charged too, so one change keeps these bounds. A cost or model-token
   * estimate that fits the limit but not the share is a retryable deny ({@link
   * io.github.llmratelimiter.core.Reason#STORE_UNAVAILABLE}).
   */
  LOCAL_FALLBACK
}
