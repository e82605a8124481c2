package io.github.llmratelimiter.gateway;

/** What a decision does when the store fails ({@code ratelimiter.store-failure}). */
public enum StoreFailure {

  /** Fail closed: {@link RateLimitStoreUnavailableException}, a 503 problem response. */
  DENY,

  /** Fail open: the call passes without a limit, with a degraded outcome. */
  ALLOW
}
