package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitRequestException;
import io.github.llmratelimiter.autoconfigure.RateLimitOutcome;
import io.github.llmratelimiter.autoconfigure.RateLimitStoreUnavailableException;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;

/**
 * Builds the RFC 9457 problem bodies of the limiter's error responses. Define a bean of this type
 * (for example extending {@link DefaultRateLimitProblemFactory}) to change them; the status codes
 * and the rate-limit headers stay as they are.
 */
public interface RateLimitProblemFactory {

  /**
   * Returns the body of a 429 response.
   *
   * @param outcome the denied outcome
   * @param request the request
   * @return the problem, with status 429
   */
  ProblemDetail rateLimited(RateLimitOutcome outcome, HttpServletRequest request);

  /**
   * Returns the body of a 401 response to a request without an API key.
   *
   * @param request the request
   * @return the problem, with status 401
   */
  ProblemDetail missingApiKey(HttpServletRequest request);

  /**
   * Returns the body of a 400 response to a request the limiter cannot limit.
   *
   * @param exception what was malformed
   * @param request the request
   * @return the problem, with status 400
   */
  ProblemDetail invalidRequest(InvalidRateLimitRequestException exception, HttpServletRequest request);

  /**
   * Returns the body of a 413 response to a request whose body is larger than the limiter accepts;
   * the default has the status's reason phrase as title, the exception's message as detail and the
   * request path as instance.
   *
   * @param exception which limit the body passed
   * @param request the request
   * @return the problem, with status 413
   */
  default ProblemDetail bodyTooLarge(RequestBodyTooLargeException exception, HttpServletRequest request) {
    ProblemDetail problem =
        ProblemDetail.forStatusAndDetail(HttpStatus.CONTENT_TOO_LARGE, exception.getMessage());
    problem.setTitle(HttpStatus.CONTENT_TOO_LARGE.getReasonPhrase());
    problem.setInstance(URI.create(request.getRequestURI()));
    return problem;
  }

  /**
   * Returns the body of a 503 response when the store failed and failures deny.
   *
   * @param exception the failure
   * @param request the request
   * @return the problem, with status 503
   */
  ProblemDetail storeUnavailable(RateLimitStoreUnavailableException exception, HttpServletRequest request);
}
