/**
 * Spring Cloud Gateway's reactive server: the limiter as the gateway's own {@link
 * org.springframework.cloud.gateway.filter.ratelimit.RateLimiter} ({@link
 * io.github.llmratelimiter.autoconfigure.cloudgateway.LlmRateLimiter}), which a {@code RequestRateLimiter}
 * filter names to charge its calls through the {@link io.github.llmratelimiter.gateway.RateLimitGateway}
 * without blocking, and a {@code KeyResolver} that reads the API key as the limiter's web adapters do.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.cloudgateway;

import org.jspecify.annotations.NullMarked;
