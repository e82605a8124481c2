/**
 * The gateway domain every front door of the rate limiter shares, free of Spring: {@linkplain
 * io.github.llmratelimiter.gateway.RateLimitPolicies policies} built from budgets, the caller's
 * {@linkplain io.github.llmratelimiter.gateway.RateLimitKey key}, the one {@linkplain
 * io.github.llmratelimiter.gateway.RateLimitGateway#charge charge step} (check, acquire, headers or
 * a problem, reconcile), the {@linkplain io.github.llmratelimiter.gateway.RateLimitContext
 * per-request context}, model-token estimates, and the rate-limit headers and RFC 9457 problem bodies
 * as data that a servlet or reactive adapter writes unchanged.
 *
 * <p>It depends on {@code rate-limiter-core} only. HTTP stacks are reached through adapters: an
 * adapter turns its request into plain values (a credential, a model, the body's bytes), calls the
 * gateway, and writes the headers and problems the gateway returns.
 */
@NullMarked
package io.github.llmratelimiter.gateway;

import org.jspecify.annotations.NullMarked;
