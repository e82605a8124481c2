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
   * its slot in the share until it is released.
   *
   * <p>What the fallback admits is written back to Redis when it answers again: each instance
   * keeps a journal of the calls its fallback admitted (their times, costs, model tokens, quota
   * charges and settlements, and whether they still hold their slots) and hands it to Redis, one
   * idempotent script call per root key (per batch of at most 256 calls), before it decides a call
   * of that key on Redis, and for every key as soon as the circuit breaker of the master that
   * serves it lets a call through (checked every 100 ms). Redis then holds the window entries at
   * the times the fallback admitted them, the bucket charged (at the time of the write-back), the
   * model tokens and quotas charged, and the slots still held (with their lease timeout counted
   * from their admission, renewed and released like any other). For the retry interval plus 200
   * ms after a master first answers an instance again following a failed call to it (the hold), a
   * call it admits must also fit that instance's share, else it is denied as the share denies it
   * and its charge on Redis is undone: meanwhile every other instance's circuit breaker lets its
   * write-back through. For one key, the instances together then admit, in any window of length
   * {@code w}:
   * <ul>
   *   <li>at most {@code N * s <= max(L, N)} when the window lies within the outage;
   *   <li>at most {@code L + (N - 1) * s} when the outage starts within it;
   *   <li>when Redis comes back within it, at most {@code max(L + G, A)}: {@code A} is what the
   *       window admitted other than by Redis's decisions past the hold (through Redis before the
   *       outage, through the fallbacks, which keep to their shares until Redis answers each
   *       instance again, and through Redis during the hold, within the shares), so at most one
   *       of the bounds above; {@code G}, the calls in flight at the return, is what the fallbacks
   *       admitted in the window and had not yet handed to Redis when Redis admitted a call past
   *       the hold of the instance that sent it. {@code G} is 0 unless a write-back failed or came
   *       later than that hold (Redis answered an instance again more than the retry interval
   *       after another); it is at most what the fallbacks admitted in the window.
   * </ul>
   * So the return adds nothing but {@code G} to what the outage admitted: a window that holds the
   * return and not the start of the outage admits at most {@code max(L, N * s) + G}.
   * The journal holds at most 65,536 calls per instance: past that, the oldest waiting call is
   * dropped (not written back), counted and logged. A write-back waits at most as long as the call
   * it precedes; one that gets no reply keeps the journal, and is sent again, as it was, later.
   *
   * <p>Calls in flight, with a share {@code c} of a concurrency limit {@code C}: an instance admits
   * only while it holds fewer than {@code c} slots, those of its calls admitted through Redis
   * included, so together the instances hold at most {@code C + N * c} slots during the outage,
   * and at most {@code N * c <= max(C, N)} once the calls admitted through Redis before it have
   * ended; the slots the fallback took are written back with their calls, so once every instance
   * has handed its journal over, Redis admits a call only while fewer than {@code C} slots are
   * held, those included.
   * An instance that joins or leaves changes {@code N} for the others; shares for {@code N - 1}
   * and {@code N + 1} are kept charged too, so one change keeps these bounds. A cost or model-token
   * estimate that fits the limit but not the share is a retryable deny ({@link
   * io.github.llmratelimiter.core.Reason#STORE_UNAVAILABLE}).
   */
  LOCAL_FALLBACK
}
