/**
 * The reactive adapter of the gateway (Spring WebFlux, on Netty or another reactive server): one
 * {@link org.springframework.web.server.WebFilter} that applies the routes, reads the key and
 * model, buffers and re-exposes a request body the limiter reads, charges without blocking and
 * settles model tokens from the response; the RFC 9457 problem responses (429, 401, 400, 413, 503);
 * and what the {@code @RateLimited} aspect needs to charge a method that returns a {@code Mono} or
 * {@code Flux}. A request's state lives in one {@link
 * io.github.llmratelimiter.gateway.RateLimitContext}, kept in one exchange attribute.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.reactive;

import org.jspecify.annotations.NullMarked;
