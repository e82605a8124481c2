package io.github.llmratelimiter.gateway;

/**
 * What a decision does when the store fails to decide: a distributed store that Redis does not
 * answer, or any store that throws.
 */
public enum StoreFailure {

  /** Fail closed: {@link RateLimitStoreUnavailableException}, a 503 problem response. */
  DENY,

  /** Fail open: the call passes without a limit, with a degraded outcome. */
  ALLOW,

  /**
   * The store's own fallback decides where it has one (the Redis store: an in-memory store deciding
   * on this instance's share of each budget); a failure the fallback cannot answer, or a store
   * without one, denies as {@link #DENY}.
   */
  LOCAL_FALLBACK
}
