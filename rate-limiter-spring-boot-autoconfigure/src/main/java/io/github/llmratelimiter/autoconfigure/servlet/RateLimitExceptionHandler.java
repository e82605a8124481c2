package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.MissingApiKeyException;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitRejection;
import io.github.llmratelimiter.gateway.RateLimitStoreUnavailableException;
import io.github.llmratelimiter.gateway.RequestBodyTooLargeException;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Turns the limiter's exceptions into {@code application/problem+json} responses: 429 with the
 * rate-limit headers, 401, 400, 413 and 503, as the gateway renders them ({@link
 * RateLimitGateway#reject}). Ordered first, so an application's catch-all handler does not turn a
 * deny into a 500.
 */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE)
final class RateLimitExceptionHandler {

  private final RateLimitGateway gateway;

  RateLimitExceptionHandler(RateLimitGateway gateway) {
    this.gateway = gateway;
  }

  @ExceptionHandler({RateLimitExceededException.class, MissingApiKeyException.class,
      InvalidRateLimitRequestException.class, RequestBodyTooLargeException.class,
      RateLimitStoreUnavailableException.class})
  ResponseEntity<ProblemDetail> reject(RuntimeException e, HttpServletRequest request) {
    RateLimitRejection rejection = gateway.reject(e, request.getRequestURI());
    if (rejection == null) {
      throw e; // every type handled here is the gateway's: unreachable
    }
    return RateLimitProblemDetails.response(rejection);
  }
}
