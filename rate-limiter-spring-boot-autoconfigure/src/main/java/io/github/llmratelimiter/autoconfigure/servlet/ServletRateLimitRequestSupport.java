package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.autoconfigure.internal.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes.Route;
import io.github.llmratelimiter.autoconfigure.RouteKeyRequest;
import io.github.llmratelimiter.gateway.internal.HttpFields;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitHeaders;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.security.Principal;
import java.util.Collections;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.PathContainer;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * The servlet side of key resolution, shared by the interceptor and the {@code @RateLimited}
 * aspect: the request's {@link RateLimitContext} lives in one request attribute ({@link
 * ServletContexts}), so a request is charged once whichever of them gets there first; the key and
 * model come from the application's {@link RateLimitKeyResolver}, the model from the source of the
 * route that matched the request, else the default source.
 */
final class ServletRateLimitRequestSupport implements RateLimitRequestSupport {

  private final RateLimitKeyResolver resolver;
  private final RateLimitGateway gateway;

  ServletRateLimitRequestSupport(RateLimitKeyResolver resolver, RateLimitGateway gateway) {
    this.resolver = resolver;
    this.gateway = gateway;
  }

  @Override
  public @Nullable Object currentRequest() {
    ServletRequestAttributes attributes = attributes();
    return attributes == null ? null : attributes.getRequest();
  }

  @Override
  public @Nullable RateLimitContext currentContext() {
    ServletRequestAttributes attributes = attributes();
    return attributes == null ? null : ServletContexts.get(attributes.getRequest(), gateway);
  }

  @Override
  public @Nullable String currentCredential() {
    ServletRequestAttributes attributes = attributes();
    return attributes == null ? null : resolver.resolveApiKey(attributes.getRequest());
  }

  @Override
  public @Nullable String currentModel() {
    ServletRequestAttributes attributes = attributes();
    return attributes == null ? null : model(attributes.getRequest());
  }

  @Override
  public void writeHeaders(RateLimitOutcome outcome) {
    ServletRequestAttributes attributes = attributes();
    if (attributes != null) {
      writeHeaders(attributes.getResponse(), outcome);
    }
  }

  /** Writes on the response of the request this thread serves now, whichever thread runs it. */
  @Override
  public Consumer<RateLimitOutcome> headerWriter() {
    ServletRequestAttributes attributes = attributes();
    HttpServletResponse response = attributes == null ? null : attributes.getResponse();
    return outcome -> writeHeaders(response, outcome);
  }

  /**
   * The key a route charges the request to: the caller its key source finds (its API key by
   * default; else the anonymous key, or a 401 or 400), with the request's model.
   */
  RateLimitKey resolveKey(HttpServletRequest request, Route route, PathContainer path) {
    String caller = route.keySource() == KeySource.API_KEY
        ? gateway.apiKey(resolver.resolveApiKey(request))
        : gateway.callerKey(route.keySource(), route.keyValue(request, view(request, path)));
    return RateLimitKey.of(caller, model(request));
  }

  /** The request as a route's key expression sees it. */
  private static RouteKeyRequest view(HttpServletRequest request, PathContainer path) {
    Principal principal = request.getUserPrincipal();
    return new RouteKeyRequest(request.getMethod(), path.value(),
        HttpFields.clientAddress(request.getRemoteAddr()),
        principal == null ? null : principal.getName(),
        name -> RouteKeyRequest.oneValue(Collections.list(request.getHeaders(name))));
  }

  private @Nullable String model(HttpServletRequest request) {
    return resolver.resolveModel(request, ServletContexts.get(request, gateway).modelSource());
  }

  /** Writes an admitted call's headers, unless the response is committed. */
  static void writeHeaders(@Nullable HttpServletResponse response, RateLimitOutcome outcome) {
    if (response != null && !response.isCommitted() && outcome.decision().allowed()) {
      RateLimitHeaders.write(outcome, response::setHeader);
    }
  }

  private static @Nullable ServletRequestAttributes attributes() {
    RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
    return attributes instanceof ServletRequestAttributes s ? s : null;
  }
}
