package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.servlet.RateLimitProblemDetails;
import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.MissingApiKeyException;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitRejection;
import io.github.llmratelimiter.gateway.RateLimitStoreUnavailableException;
import io.github.llmratelimiter.gateway.RequestBodyTooLargeException;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Turns the limiter's exceptions raised by a WebFlux controller (an annotated method's deny, which
 * its {@code Mono} or {@code Flux} signals) into the same {@code application/problem+json}
 * responses as the servlet adapter: 429 with the rate-limit headers, 401, 400, 413 and 503, as the
 * gateway renders them ({@link RateLimitGateway#reject}). Ordered first, so an application's
 * catch-all handler does not turn a deny into a 500.
 */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE)
final class ReactiveRateLimitExceptionHandler {

  private final RateLimitGateway gateway;

  ReactiveRateLimitExceptionHandler(RateLimitGateway gateway) {
    this.gateway = gateway;
  }

  @ExceptionHandler({RateLimitExceededException.class, MissingApiKeyException.class,
      InvalidRateLimitRequestException.class, RequestBodyTooLargeException.class,
      RateLimitStoreUnavailableException.class})
  ResponseEntity<ProblemDetail> reject(RuntimeException e, ServerHttpRequest request) {
    RateLimitRejection rejection = gateway.reject(e, request.getURI().getRawPath());
    if (rejection == null) {
      throw e; // every type handled here is the gateway's: unreachable
    }
    return RateLimitProblemDetails.response(rejection);
  }
}
