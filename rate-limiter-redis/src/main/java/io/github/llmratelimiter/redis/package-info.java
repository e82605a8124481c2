/**
 * A distributed {@link io.github.llmratelimiter.core.RateLimitStore} on Redis (standalone, through
 * Sentinel, or Cluster; in clear or over TLS): every decision, a hierarchy's included, is one atomic
 * Lua script call that gives the same results as the in-memory store, so gateway instances that
 * share one Redis share their budgets.
 *
 * <p>Start from {@link io.github.llmratelimiter.redis.RedisRateLimitStore#builder(String)}; a
 * {@link io.github.llmratelimiter.redis.FailurePolicy} says what happens while Redis does not
 * answer.
 */
@NullMarked
package io.github.llmratelimiter.redis;

import org.jspecify.annotations.NullMarked;
