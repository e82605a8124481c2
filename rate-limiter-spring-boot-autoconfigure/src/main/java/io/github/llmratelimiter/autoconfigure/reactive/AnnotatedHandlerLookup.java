package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.RateLimitedHandlers;
import io.github.llmratelimiter.gateway.RateLimited;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.web.reactive.result.method.annotation.RequestMappingHandlerMapping;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Finds whether the controller method that will handle a request carries {@link RateLimited}: a
 * WebFilter runs before the handler is chosen, so it asks the application's request mappings, as
 * the dispatcher will. Only the mappings that hold an annotated method at all are asked (looked up
 * once, on the first request); an application without one pays nothing.
 */
final class AnnotatedHandlerLookup {

  private static final Mono<Boolean> NO = Mono.just(false);

  private final ObjectProvider<RequestMappingHandlerMapping> mappings;
  private final RateLimitedHandlers handlers = new RateLimitedHandlers();
  private volatile @Nullable List<RequestMappingHandlerMapping> annotated;

  AnnotatedHandlerLookup(ObjectProvider<RequestMappingHandlerMapping> mappings) {
    this.mappings = mappings;
  }

  /** Whether the request's handler is an annotated controller method; never an error. */
  Mono<Boolean> annotated(ServerWebExchange exchange) {
    List<RequestMappingHandlerMapping> asked = annotated();
    if (asked.isEmpty()) {
      return NO;
    }
    return Flux.fromIterable(asked)
        .concatMap(mapping -> mapping.getHandler(exchange))
        .next()
        .map(handlers::annotated)
        .defaultIfEmpty(false)
        .onErrorReturn(false); // no handler of that method or media type: the dispatcher answers
  }

  private List<RequestMappingHandlerMapping> annotated() {
    List<RequestMappingHandlerMapping> found = annotated;
    if (found == null) {
      found = mappings.orderedStream()
          .filter(m -> m.getHandlerMethods().values().stream().anyMatch(handlers::annotated))
          .toList();
      annotated = found;
    }
    return found;
  }
}
