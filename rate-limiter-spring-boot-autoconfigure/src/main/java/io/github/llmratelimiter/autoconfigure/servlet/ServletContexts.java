package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.http.HttpServletRequest;
import org.jspecify.annotations.Nullable;

/**
 * Keeps a request's {@link RateLimitContext} in the one request attribute {@link #ATTRIBUTE}, where
 * every part of the servlet adapter (the body filter, the interceptor, the aspect's support, the
 * usage filter) finds the same one; it outlives an error dispatch of the same request.
 */
final class ServletContexts {

  /** The request attribute that holds the context. */
  static final String ATTRIBUTE = RateLimitContext.class.getName();

  private ServletContexts() {}

  /** The request's context, created from its declared length and content type on first use. */
  static RateLimitContext get(HttpServletRequest request, RateLimitGateway gateway) {
    if (request.getAttribute(ATTRIBUTE) instanceof RateLimitContext context) {
      return context;
    }
    RateLimitContext context = gateway.context(request.getContentLengthLong(), request.getContentType());
    request.setAttribute(ATTRIBUTE, context);
    return context;
  }

  /** The request's context, or {@code null} when nothing created one. */
  static @Nullable RateLimitContext find(ServletRequest request) {
    return request.getAttribute(ATTRIBUTE) instanceof RateLimitContext context ? context : null;
  }
}
