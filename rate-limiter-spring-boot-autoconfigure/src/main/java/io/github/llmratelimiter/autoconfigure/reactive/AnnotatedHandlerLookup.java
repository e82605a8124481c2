package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.internal.RateLimitedHandlers;
import io.github.llmratelimiter.gateway.RateLimited;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.web.reactive.result.method.annotation.RequestMappingHandlerMapping;

/**
 * Tells whether a handler is a controller method that carries {@link RateLimited}, and whether the
 * application has such a method at all (looked up once, on the first request): an application
 * without one never asks which handler a request goes to unless a route covers it.
 */
final class AnnotatedHandlerLookup {

  private final ObjectProvider<RequestMappingHandlerMapping> mappings;
  private final RateLimitedHandlers handlers = new RateLimitedHandlers();
  private volatile @Nullable Boolean any;

  AnnotatedHandlerLookup(ObjectProvider<RequestMappingHandlerMapping> mappings) {
    this.mappings = mappings;
  }

  /** Whether some request mapping holds an annotated controller method. */
  boolean any() {
    Boolean found = any;
    if (found == null) {
      found = mappings.orderedStream()
          .anyMatch(m -> m.getHandlerMethods().values().stream().anyMatch(handlers::annotated));
      any = found;
    }
    return found;
  }

  /** Whether a handler the dispatcher's mappings found is an annotated controller method. */
  boolean annotated(Object handler) {
    return handlers.annotated(handler);
  }
}
