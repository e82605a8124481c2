package io.github.llmratelimiter.autoconfigure.internal;

import io.github.llmratelimiter.gateway.RateLimited;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.web.method.HandlerMethod;

/**
 * Tells a web front door whether a handler method carries {@link RateLimited} (or its class does):
 * the route then leaves the request to the annotation, so it is charged once, with the more
 * specific declaration. Each method and class is looked up once.
 */
public final class RateLimitedHandlers {

  private final Map<Method, Boolean> methods = new ConcurrentHashMap<>();
  private final Map<Class<?>, Boolean> types = new ConcurrentHashMap<>();

  /** Creates an empty cache. */
  public RateLimitedHandlers() {}

  /**
   * Returns whether a handler is an annotated handler method.
   *
   * @param handler the handler a handler mapping found, of any type
   * @return whether it is a {@link HandlerMethod} whose method or bean type carries the annotation
   */
  public boolean annotated(Object handler) {
    return handler instanceof HandlerMethod m
        && (methods.computeIfAbsent(m.getMethod(),
                method -> AnnotatedElementUtils.hasAnnotation(method, RateLimited.class))
            || types.computeIfAbsent(m.getBeanType(),
                type -> AnnotatedElementUtils.hasAnnotation(type, RateLimited.class)));
  }
}
