package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes.Route;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitedHandlers;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.ModelSource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimited;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
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
 *
 * <p>A routed call whose policy may wait for its upstream ({@code max-wait}) is charged through
 * {@link RateLimitGateway#chargeAsync}: when its charge is decided at once it goes on as any call;
 * when it waits, the request goes into the servlet's asynchronous mode and holds no thread ({@link
 * AsyncUpstreamWait}), and is dispatched again once the wait ends, where the outcome lets the
 * handler run or is answered as a deny. A call whose policy never waits is charged on the calling
 * thread ({@link RateLimitGateway#charge}).
 */
final class RateLimitInterceptor implements HandlerInterceptor {

  private static final UrlPathHelper PATHS = UrlPathHelper.defaultInstance;

  private final RateLimitRoutes routes;
  private final RateLimitGateway gateway;
  private final ServletRateLimitRequestSupport support;
  private final boolean annotationsEnforced;
  private final RateLimitedHandlers handlers = new RateLimitedHandlers();
  private final AsyncUpstreamWait waits;

  RateLimitInterceptor(RateLimitRoutes routes, RateLimitGateway gateway,
      ServletRateLimitRequestSupport support, boolean annotationsEnforced) {
    this.routes = routes;
    this.gateway = gateway;
    this.support = support;
    this.annotationsEnforced = annotationsEnforced;
    this.waits = new AsyncUpstreamWait(gateway.enforcer());
  }

  @Override
  public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
    if (CorsUtils.isPreFlightRequest(request)) {
      return true; // a browser's question before a call, without credentials: CORS answers it
    }
    AsyncUpstreamWait.Result waited = AsyncUpstreamWait.resumed(request);
    if (waited != null) { // dispatched again once its wait for the upstream ended
      ServletRateLimitRequestSupport.writeHeaders(response, waited.admitted());
      return true;
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
    gateway.check(context, route.policy());
    RateLimitKey key = support.resolveKey(request, route, path);
    Duration longestWait = waits.longestWait(route.policy());
    if (longestWait.isZero()) {
      ServletRateLimitRequestSupport.writeHeaders(
          response, gateway.charge(context, route.policy(), key, 1.0));
      return true;
    }
    CompletableFuture<RateLimitOutcome> charge =
        gateway.chargeAsync(context, route.policy(), key, 1.0).toCompletableFuture();
    if (!charge.isDone()) { // it waits for its upstream: no thread is held meanwhile
      waits.suspend(request, response, charge, route.policy(), longestWait);
      return false;
    }
    ServletRateLimitRequestSupport.writeHeaders(
        response, AsyncUpstreamWait.Result.of(charge).admitted());
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
