package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.ModelSource;
import io.github.llmratelimiter.autoconfigure.RateLimitEnforcer;
import io.github.llmratelimiter.autoconfigure.RateLimitExceededException;
import io.github.llmratelimiter.autoconfigure.RateLimitOutcome;
import io.github.llmratelimiter.autoconfigure.RateLimited;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.http.server.PathContainer;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.util.ServletRequestPathUtils;
import org.springframework.web.util.UrlPathHelper;
import org.springframework.web.util.pattern.PathPattern;

/**
 * Limits the requests whose path matches a configured route, with the route's policy, at cost 1,
 * and the model read from the route's {@link ModelSource}. A handler method that carries {@link
 * RateLimited} (or whose class does) is left to the aspect while one is active (its default model
 * still comes from the route's source), and a request already charged is not charged again.
 */
final class RateLimitInterceptor implements HandlerInterceptor {

  private static final UrlPathHelper PATHS = UrlPathHelper.defaultInstance;

  private final List<Route> routes;
  private final RateLimitEnforcer enforcer;
  private final ServletRateLimitRequestSupport support;
  private final boolean annotationsEnforced;
  private final Map<Method, Boolean> annotatedMethods = new ConcurrentHashMap<>();
  private final Map<Class<?>, Boolean> annotatedTypes = new ConcurrentHashMap<>();

  RateLimitInterceptor(List<Route> routes, RateLimitEnforcer enforcer,
      ServletRateLimitRequestSupport support, boolean annotationsEnforced) {
    this.routes = List.copyOf(routes);
    this.enforcer = enforcer;
    this.support = support;
    this.annotationsEnforced = annotationsEnforced;
  }

  @Override
  public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
    if (support.alreadyCharged(request)) {
      return true;
    }
    Route route = routes.isEmpty() ? null : match(path(request));
    boolean annotated = annotationsEnforced && annotated(handler);
    if (route == null && !annotated) {
      return true;
    }
    ModelPeekingFilter.limited(request);
    if (route == null) {
      return true;
    }
    request.setAttribute(ServletRateLimitRequestSupport.MODEL_SOURCE_ATTRIBUTE, route.modelSource());
    if (annotated) {
      return true;
    }
    support.check(request);
    RateLimitOutcome outcome = enforcer.acquire(route.policy(), support.resolveKey(request, null),
        1.0, () -> support.estimateModelTokens(request));
    support.record(request, response, outcome);
    if (outcome.decision().denied()) {
      throw new RateLimitExceededException(outcome);
    }
    return true;
  }

  private @Nullable Route match(PathContainer path) {
    for (Route r : routes) {
      if (r.matches(path)) {
        return r;
      }
    }
    return null;
  }

  /**
   * The path within the application: the one Spring MVC parsed to find the handler when it did,
   * else parsed here.
   */
  private static PathContainer path(HttpServletRequest request) {
    if (ServletRequestPathUtils.hasParsedRequestPath(request)) {
      return ServletRequestPathUtils.getParsedRequestPath(request).pathWithinApplication();
    }
    return PathContainer.parsePath(PATHS.getPathWithinApplication(request));
  }

  /** Whether the handler carries {@link RateLimited}, looked up once per method and class. */
  private boolean annotated(Object handler) {
    return handler instanceof HandlerMethod m
        && (annotatedMethods.computeIfAbsent(m.getMethod(),
                method -> AnnotatedElementUtils.hasAnnotation(method, RateLimited.class))
            || annotatedTypes.computeIfAbsent(m.getBeanType(),
                type -> AnnotatedElementUtils.hasAnnotation(type, RateLimited.class)));
  }

  /**
   * A compiled route: include and exclude patterns, the policy (null: the default) and where its
   * model is read.
   */
  record Route(List<PathPattern> include, List<PathPattern> exclude, @Nullable String policy,
      ModelSource modelSource) {

    boolean matches(PathContainer path) {
      for (PathPattern p : exclude) {
        if (p.matches(path)) {
          return false;
        }
      }
      for (PathPattern p : include) {
        if (p.matches(path)) {
          return true;
        }
      }
      return false;
    }
  }
}
