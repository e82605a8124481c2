package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitRequestException;
import io.github.llmratelimiter.autoconfigure.MissingApiKeyException;
import io.github.llmratelimiter.autoconfigure.RateLimitExceededException;
import io.github.llmratelimiter.autoconfigure.RateLimitStoreUnavailableException;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Turns the limiter's exceptions into {@code application/problem+json} responses: 429 with the
 * rate-limit headers, 401, 400, 413 and 503. Ordered first, so an application's catch-all handler does
 * not turn a deny into a 500.
 *
 * <p>A deny whose reason is {@link Reason#STORE_UNAVAILABLE} (a distributed store whose backend is
 * down, under a fail-closed policy) is not a rate limit: it becomes a 503, with {@code Retry-After}
 * (whole seconds, rounded up) and {@code retry-after-ms} from the store's retry time.
 */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE)
final class RateLimitExceptionHandler {

  private final RateLimitProblemFactory problems;

  RateLimitExceptionHandler(RateLimitProblemFactory problems) {
    this.problems = problems;
  }

  @ExceptionHandler(RateLimitExceededException.class)
  ResponseEntity<ProblemDetail> rateLimited(RateLimitExceededException e, HttpServletRequest request) {
    Decision d = e.decision();
    if (d.reason() == Reason.STORE_UNAVAILABLE) {
      return unavailable(
          new RateLimitStoreUnavailableException(e.outcome().policy().name(), d.retryAfterMs()),
          request);
    }
    ResponseEntity.BodyBuilder response = ResponseEntity.status(HttpStatus.TOO_MANY_REQUESTS)
        .contentType(MediaType.APPLICATION_PROBLEM_JSON);
    RateLimitHeaders.write(e.outcome(), response::header);
    return response.body(problems.rateLimited(e.outcome(), request));
  }

  @ExceptionHandler(MissingApiKeyException.class)
  ResponseEntity<ProblemDetail> missingApiKey(HttpServletRequest request) {
    return ResponseEntity.status(HttpStatus.UNAUTHORIZED)
        .contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .header("WWW-Authenticate", "Bearer")
        .body(problems.missingApiKey(request));
  }

  @ExceptionHandler(InvalidRateLimitRequestException.class)
  ResponseEntity<ProblemDetail> invalid(InvalidRateLimitRequestException e, HttpServletRequest request) {
    return ResponseEntity.status(HttpStatus.BAD_REQUEST)
        .contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .body(problems.invalidRequest(e, request));
  }

  @ExceptionHandler(RequestBodyTooLargeException.class)
  ResponseEntity<ProblemDetail> tooLarge(RequestBodyTooLargeException e, HttpServletRequest request) {
    return ResponseEntity.status(HttpStatus.CONTENT_TOO_LARGE)
        .contentType(MediaType.APPLICATION_PROBLEM_JSON)
        .body(problems.bodyTooLarge(e, request));
  }

  @ExceptionHandler(RateLimitStoreUnavailableException.class)
  ResponseEntity<ProblemDetail> unavailable(
      RateLimitStoreUnavailableException e, HttpServletRequest request) {
    ResponseEntity.BodyBuilder response = ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
        .contentType(MediaType.APPLICATION_PROBLEM_JSON);
    if (e.retryAfterMs() > 0) {
      response.header(RateLimitHeaders.RETRY_AFTER,
          Long.toString(Math.max(1, RateLimitHeaders.ceilSeconds(e.retryAfterMs()))));
      response.header(RateLimitHeaders.RETRY_AFTER_MS, Long.toString(e.retryAfterMs()));
    }
    return response.body(problems.storeUnavailable(e, request));
  }
}
