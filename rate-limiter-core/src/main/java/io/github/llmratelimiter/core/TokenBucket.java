package io.github.llmratelimiter.core;

/**
 * A per-key token bucket that starts full and refills continuously, computed lazily on each call.
 *
 * <p>{@link #allow(String, double)} debits {@code tokens} (fractional allowed) when the bucket
 * holds them, less a tolerance of 10<sup>-9</sup> of the cost that absorbs floating-point error (so
 * no cost, however small, passes an empty bucket); otherwise it denies with {@link
 * Reason#BURST_LIMIT} and retries once the deficit has refilled ({@code deficit / refillPerSecond}
 * seconds, less the tolerance), rounded up to the first whole millisecond at which the call
 * passes. With a refill of 0
 * that wait is 0 and the decision is not {@linkplain Decision#retryable() retryable}: waiting never
 * refills the bucket, and a client must not read the 0 as "retry now". A cost above capacity is
 * denied with {@link Reason#COST_EXCEEDS_CAPACITY}, before the key's state is read: remaining 0,
 * reset 0. Thread-safe: each key has its own lock.
 */
public final class TokenBucket {

  private final Budget budget;
  private final RateLimitStore store;

  private TokenBucket(Budget budget, RateLimitStore store) {
    this.budget = budget;
    this.store = store;
  }

  /**
   * Returns a bucket on the system ticker.
   *
   * @param capacity the most tokens held, finite and positive
   * @param refillPerSecond tokens regained per second, finite and not negative
   * @return a new bucket
   * @throws IllegalArgumentException on a bad capacity or refill
   */
  public static TokenBucket of(double capacity, double refillPerSecond) {
    return of(capacity, refillPerSecond, Ticker.system());
  }

  /**
   * Returns a bucket that reads time from {@code ticker}.
   *
   * @param capacity the most tokens held, finite and positive
   * @param refillPerSecond tokens regained per second, finite and not negative
   * @param ticker the time source
   * @return a new bucket
   * @throws IllegalArgumentException on a bad capacity, refill or ticker
   */
  public static TokenBucket of(double capacity, double refillPerSecond, Ticker ticker) {
    Budget budget = new Budget("burst", null, new BucketLimit(capacity, refillPerSecond));
    return new TokenBucket(budget, RateLimitStore.inMemory(ticker));
  }

  /**
   * Debits {@code tokens} from the key's bucket if it holds them.
   *
   * @param key the key, not blank
   * @param tokens the cost, finite and positive
   * @return an {@link Reason#OK}, {@link Reason#BURST_LIMIT} or {@link
   *     Reason#COST_EXCEEDS_CAPACITY} decision
   * @throws IllegalArgumentException if the key is blank or the cost is not finite and positive
   */
  public Decision allow(String key, double tokens) {
    return store.acquire(budget, key, tokens, Composition.SEQUENTIAL);
  }

  /**
   * Debits one token from the key's bucket if it holds it.
   *
   * @param key the key, not blank
   * @return the decision
   * @throws IllegalArgumentException if the key is blank
   */
  public Decision allow(String key) {
    return allow(key, 1.0);
  }

  /**
   * Returns the capacity and refill of this bucket.
   *
   * @return the bucket limit
   */
  public BucketLimit limit() {
    return budget.bucket();
  }
}
