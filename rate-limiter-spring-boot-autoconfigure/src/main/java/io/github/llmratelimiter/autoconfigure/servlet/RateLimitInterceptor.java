package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes.Route;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitedHandlers;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.ModelSource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimited;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.server.PathContainer;
import org.springframework.web.cors.CorsUtils;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.util.ServletRequestPathUtils;
import org.springframework.web.util.UrlPathHelper;

/**
 * Limits the requests whose path and method match a configured route, with the route's policy, at
 * cost 1, charged to the caller the route's key source finds, with the model read from the route's
 * {@link ModelSource}. A handler method that carries {@link
 * RateLimited} (or whose class does) is left to the aspect while one is active (its default model
 * still comes from the route's source, and without a key of its own it is charged to the caller
 * the route's key source finds), and a request already charged is not charged again. A CORS
 * preflight request is neither charged nor rejected: the application's CORS configuration answers
 * it (it carries no credentials), and the call it asks about is charged. It
 * charges through the {@link RateLimitGateway}: a deny throws {@link RateLimitExceededException},
 * which {@link RateLimitExceptionHandler} answers.
 */
final class RateLimitInterceptor implements HandlerInterceptor {

  private static final UrlPathHelper PATHS = UrlPathHelper.defaultInstance;

  private final RateLimitRoutes routes;
  private final RateLimitGateway gateway;
  private final ServletRateLimitRequestSupport support;
  private final boolean annotationsEnforced;
  private final RateLimitedHandlers handlers = new RateLimitedHandlers();

  RateLimitInterceptor(RateLimitRoutes routes, RateLimitGateway gateway,
      ServletRateLimitRequestSupport support, boolean annotationsEnforced) {
    this.routes = routes;
    this.gateway = gateway;
    this.support = support;
    this.annotationsEnforced = annotationsEnforced;
  }

  @Override
  public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
    if (CorsUtils.isPreFlightRequest(request)) {
      return true; // a browser's question before a call, without credentials: CORS answers it
    }
    RateLimitContext found = ServletContexts.find(request);
    if (found != null && found.charged()) {
      return true;
    }
    PathContainer path = path(request);
    Route route = routes.isEmpty() ? null : routes.match(path, request.getMethod());
    boolean annotated = annotationsEnforced && handlers.annotated(handler);
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
      if (route.keySource() != KeySource.API_KEY) { // the annotation charges the route's caller
        gateway.check(context);
        context.routeCaller(support.resolveKey(request, route, path).apiKey());
      }
      return true;
    }
    gateway.check(context);
    RateLimitOutcome outcome =
        gateway.charge(context, route.policy(), support.resolveKey(request, route, path), 1.0);
    ServletRateLimitRequestSupport.writeHeaders(response, outcome);
    return true;
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
}
