/**
 * The enforcement of {@code @RateLimited} on Spring bean methods: a Spring AOP interceptor and its
 * advisor (no AspectJ needed), charging before the method runs, or on subscription when it returns
 * a {@code Mono} or {@code Flux}.
 */
@NullMarked
package io.github.llmratelimiter.autoconfigure.aspect;

import org.jspecify.annotations.NullMarked;
