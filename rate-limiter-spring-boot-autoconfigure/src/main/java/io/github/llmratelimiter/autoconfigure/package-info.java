/**
 * Spring Boot auto-configuration of the LLM gateway rate limiter: properties under {@code
 * ratelimiter}, turned into the plain settings of {@code rate-limiter-gateway}; the resolved
 * policies, the store, the enforcer and the {@link io.github.llmratelimiter.gateway.RateLimitGateway}
 * that the web, aspect, endpoint and metrics adapters share. Every web stack is optional: the
 * adapters activate only where their stack is on the class path.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure;

import org.jspecify.annotations.NullMarked;
