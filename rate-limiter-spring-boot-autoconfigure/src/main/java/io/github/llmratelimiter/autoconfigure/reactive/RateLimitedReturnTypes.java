package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.internal.AnnotationEnforcement;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitedHandlers;
import io.github.llmratelimiter.gateway.RateLimited;
import java.lang.reflect.Method;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.reactive.result.method.annotation.RequestMappingHandlerMapping;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Fails the start of a WebFlux application that has a {@link RateLimited} controller method which
 * does not return a {@code Mono}, a {@code Flux} or a supertype of both (such as {@code Publisher}):
 * such a method is called outside the Reactor context that carries its request, so it could only be
 * charged blocking an event loop, without its request's key. The message names the method.
 */
final class RateLimitedReturnTypes implements SmartInitializingSingleton {

  private final ObjectProvider<AnnotationEnforcement> annotations;
  private final ObjectProvider<RequestMappingHandlerMapping> mappings;

  RateLimitedReturnTypes(ObjectProvider<AnnotationEnforcement> annotations,
      ObjectProvider<RequestMappingHandlerMapping> mappings) {
    this.annotations = annotations;
    this.mappings = mappings;
  }

  @Override
  public void afterSingletonsInstantiated() {
    if (annotations.getIfAvailable() == null) {
      return; // nothing enforces the annotation
    }
    RateLimitedHandlers handlers = new RateLimitedHandlers();
    mappings.orderedStream().flatMap(mapping -> mapping.getHandlerMethods().values().stream())
        .filter(handlers::annotated)
        .map(HandlerMethod::getMethod)
        .filter(method -> !publishes(method.getReturnType()))
        .findFirst()
        .ifPresent(method -> {
          throw new IllegalStateException(describe(method));
        });
  }

  /** Whether a return type can hold both a {@code Mono} and a {@code Flux} (but is not Object). */
  private static boolean publishes(Class<?> type) {
    return type == Mono.class || type == Flux.class
        || (type != Object.class && type.isAssignableFrom(Mono.class) && type.isAssignableFrom(Flux.class));
  }

  private static String describe(Method method) {
    return "@RateLimited on " + method.getDeclaringClass().getSimpleName() + "." + method.getName()
        + "() returns " + method.getReturnType().getSimpleName() + ": on WebFlux an annotated handler "
        + "method must return a Mono or a Flux, which is charged without blocking when subscribed "
        + "(for example Mono.fromSupplier(...) around its value)";
  }
}
