package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.gateway.ModelSource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimited;
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
 * still comes from the route's source), and a request already charged is not charged again. It
 * charges through the {@link RateLimitGateway}: a deny throws {@link RateLimitExceededException},
 * which {@link RateLimitExceptionHandler} answers.
 */
final class RateLimitInterceptor implements HandlerInterceptor {

  private static final UrlPathHelper PATHS = UrlPathHelper.defaultInstance;

  private final List<Route> routes;
  private final RateLimitGateway gateway;
  private final ServletRateLimitRequestSupport support;
  private final boolean annotationsEnforced;
  private final Map<Method, Boolean> annotatedMethods = new ConcurrentHashMap<>();
  private final Map<Class<?>, Boolean> annotatedTypes = new ConcurrentHashMap<>();

  RateLimitInterceptor(List<Route> routes, RateLimitGateway gateway,
      ServletRateLimitRequestSupport support, boolean annotationsEnforced) {
    this.routes = List.copyOf(routes);
    this.gateway = gateway;
    this.support = support;
    this.annotationsEnforced = annotationsEnforced;
  }

  @Override
  public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
    RateLimitContext found = ServletContexts.find(request);
    if (found != null && found.charged()) {
      return true;
    }
    Route route = routes.isEmpty() ? null : match(path(request));
    boolean annotated = annotationsEnforced && annotated(handler);
    if (route == null && !annotated) {
      return true;
    }
    RateLimitContext context = found != null ? found : ServletContexts.get(request, gateway);
    context.markLimited();
    if (route == null) {
      return true;
    }
    context.modelSource(route.modelSource());
    if (annotated) {
      return true;
    }
    gateway.check(context);
    RateLimitOutcome outcome =
        gateway.charge(context, route.policy(), support.resolveKey(request, null), 1.0);
    ServletRateLimitRequestSupport.writeHeaders(response, outcome);
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
