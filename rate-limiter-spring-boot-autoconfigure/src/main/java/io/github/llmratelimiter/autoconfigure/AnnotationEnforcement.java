package io.github.llmratelimiter.autoconfigure;

/**
 * Marks the bean that enforces {@link io.github.llmratelimiter.gateway.RateLimited}: while one
 * exists, the route interceptor leaves annotated handler methods to it, so a request is charged
 * once.
 */
public interface AnnotationEnforcement {}
