package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.ModelTokenReservation;
import io.github.llmratelimiter.gateway.RateLimitContext;
import jakarta.servlet.ServletRequest;
import java.util.Optional;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;

/**
 * Finds the {@link ModelTokenReservation} of an HTTP request that a tokens-per-window (TPM) budget
 * admitted, so gateway code can settle it itself: with the usage its upstream client reported, or
 * with a refund when the upstream call failed.
 *
 * <pre>{@code
 * ModelTokenReservation tokens = ModelTokens.current().orElse(null); // on the request's thread
 * try {
 *   Reply reply = upstream.call(request);
 *   if (tokens != null) tokens.reconcile(reply.totalTokens());
 * } catch (UpstreamException e) {
 *   if (tokens != null) tokens.refund(); // the RPM slot stays charged
 *   throw e;
 * }
 * }</pre>
 *
 * <p>Code that does not settle it leaves it to {@link ModelTokenUsageFilter}, which reads the usage
 * of an OpenAI-shaped response.
 */
public final class ModelTokens {

  private ModelTokens() {}

  /**
   * Returns the reservation of the request bound to the calling thread.
   *
   * @return the reservation, or empty outside a request or when the request reserved no model
   *     tokens
   */
  public static Optional<ModelTokenReservation> current() {
    RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
    return attributes != null
        && attributes.getAttribute(ServletContexts.ATTRIBUTE, RequestAttributes.SCOPE_REQUEST)
            instanceof RateLimitContext context
        ? Optional.ofNullable(context.modelTokens()) : Optional.empty();
  }

  /**
   * Returns the reservation of a request.
   *
   * @param request the request
   * @return the reservation, or empty when the request reserved no model tokens
   */
  public static Optional<ModelTokenReservation> of(ServletRequest request) {
    RateLimitContext context = ServletContexts.find(request);
    return context == null ? Optional.empty() : Optional.ofNullable(context.modelTokens());
  }
}
