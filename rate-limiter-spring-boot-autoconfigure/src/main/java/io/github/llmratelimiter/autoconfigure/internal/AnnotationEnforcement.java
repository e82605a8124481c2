package io.github.llmratelimiter.autoconfigure.internal;

/**
 * Marks the bean that enforces {@link io.github.llmratelimiter.gateway.RateLimited}: while one
 * exists, the routes (the servlet interceptor, the reactive filter) leave annotated handler methods
 * to it, so a request is charged once.
 */
public interface AnnotationEnforcement {}
