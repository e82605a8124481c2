package io.github.llmratelimiter.autoconfigure.internal;

import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimited;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * What the {@link RateLimited} aspect needs from an HTTP request: the request's {@link
 * RateLimitContext} (whether it was charged, its body, its route's model source), the caller's
 * credential and model, and where an admitted call's headers go. The servlet auto-configuration
 * provides one for the request the calling thread serves; the reactive one binds one to the request
 * of a subscriber's context ({@link ReactiveRateLimitRequestSupport}). Absent outside a web
 * application.
 */
public interface RateLimitRequestSupport {

  /**
   * Returns the HTTP request.
   *
   * @return the request (an {@code HttpServletRequest}, or a WebFlux {@code ServerHttpRequest}), or
   *     {@code null} outside a request
   */
  @Nullable Object currentRequest();

  /**
   * Returns the context of the request, created on first use.
   *
   * @return the context, or {@code null} outside a request
   */
  @Nullable RateLimitContext currentContext();

  /**
   * Returns the API key the current request carries, as the application's key resolver reads it.
   *
   * @return the key, or {@code null} (or blank) when it carries none or outside a request
   * @throws io.github.llmratelimiter.gateway.InvalidRateLimitRequestException if its credentials
   *     are ambiguous
   */
  @Nullable String currentCredential();

  /**
   * Returns the model the current request names, read from its route's source.
   *
   * @return the model, or {@code null} when it names none or outside a request
   * @throws io.github.llmratelimiter.gateway.InvalidRateLimitRequestException if the source names
   *     the model ambiguously or malformed
   */
  @Nullable String currentModel();

  /**
   * Writes an admitted outcome's rate-limit headers on the current response, unless it is
   * committed; does nothing outside a request.
   *
   * @param outcome the outcome
   */
  void writeHeaders(RateLimitOutcome outcome);

  /**
   * Returns what writes an outcome's headers on the response of the request current now, from any
   * thread: for a charge whose outcome may arrive on another thread (a plan or a decision read
   * from a remote store). The default writes on the response current when it runs.
   *
   * @return the writer
   */
  default Consumer<RateLimitOutcome> headerWriter() {
    return this::writeHeaders;
  }
}
