package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitRequestException;
import io.github.llmratelimiter.autoconfigure.RateLimitOutcome;
import io.github.llmratelimiter.autoconfigure.RateLimitStoreUnavailableException;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;

/**
 * The default problem bodies. A 429 carries {@code type}, {@code title}, {@code status}, {@code
 * detail}, {@code instance} (the request path) and the members {@code reason}, {@code policy},
 * {@code level}, {@code retryable} and, when retryable, {@code retryAfterMs}; when the policy
 * limits model tokens, also {@code estimatedModelTokens}. A deny that waiting
 * cannot clear says so in its {@code detail} and has {@code retryable: false}.
 */
public class DefaultRateLimitProblemFactory implements RateLimitProblemFactory {

  private final URI rateLimitedType;

  /**
   * Creates the factory.
   *
   * @param rateLimitedType the {@code type} of 429 problems
   */
  public DefaultRateLimitProblemFactory(URI rateLimitedType) {
    this.rateLimitedType = rateLimitedType;
  }

  @Override
  public ProblemDetail rateLimited(RateLimitOutcome outcome, HttpServletRequest request) {
    Decision d = outcome.decision();
    String policy = outcome.policy().name();
    String detail = "Rate limit exceeded for policy '" + policy + "' (" + d.reason() + " on level '"
        + d.level() + "'). " + (d.retryable()
            ? "Retry after " + d.retryAfterMs() + " ms."
            : "Waiting will not clear this limit (" + whyFinal(outcome) + "): do not retry.");
    ProblemDetail problem = problem(HttpStatus.TOO_MANY_REQUESTS, detail, request);
    problem.setType(rateLimitedType);
    problem.setProperty("reason", d.reason().name());
    problem.setProperty("policy", policy);
    problem.setProperty("level", d.level());
    problem.setProperty("retryable", d.retryable());
    if (d.retryable()) {
      problem.setProperty("retryAfterMs", d.retryAfterMs());
    }
    if (outcome.reservation() != null) {
      problem.setProperty("estimatedModelTokens", outcome.reservation().estimate());
    }
    return problem;
  }

  private static String whyFinal(RateLimitOutcome outcome) {
    Reservation r = outcome.reservation();
    if (outcome.decision().reason() != Reason.COST_EXCEEDS_CAPACITY) {
      return "the bucket does not refill";
    }
    if (r != null && !outcome.decidingBudget().fitsModelTokens(r.estimate())) {
      return "the call's estimate of " + r.estimate()
          + " model tokens exceeds the model-token limit of " + outcome.decidingBudget().modelTokens().limit();
    }
    return "the call costs more tokens than the bucket can hold";
  }

  @Override
  public ProblemDetail missingApiKey(HttpServletRequest request) {
    return problem(HttpStatus.UNAUTHORIZED,
        "The request carries no API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'.",
        request);
  }

  @Override
  public ProblemDetail invalidRequest(
      InvalidRateLimitRequestException exception, HttpServletRequest request) {
    return problem(HttpStatus.BAD_REQUEST, exception.getMessage(), request);
  }

  /** {@inheritDoc} This one also carries {@code maxBodyBytes}, the limit the body passed. */
  @Override
  public ProblemDetail bodyTooLarge(
      RequestBodyTooLargeException exception, HttpServletRequest request) {
    ProblemDetail problem = problem(HttpStatus.CONTENT_TOO_LARGE, exception.getMessage(), request);
    problem.setProperty("maxBodyBytes", exception.limitBytes());
    return problem;
  }

  @Override
  public ProblemDetail storeUnavailable(
      RateLimitStoreUnavailableException exception, HttpServletRequest request) {
    ProblemDetail problem = problem(HttpStatus.SERVICE_UNAVAILABLE,
        "The rate limiter cannot decide right now; the request was not served.", request);
    problem.setProperty("policy", exception.policy());
    if (exception.retryAfterMs() > 0) {
      problem.setProperty("retryAfterMs", exception.retryAfterMs());
    }
    return problem;
  }

  /**
   * Returns a problem with the status's reason phrase as title and the request path as instance.
   *
   * @param status the status
   * @param detail the detail
   * @param request the request
   * @return the problem
   */
  protected ProblemDetail problem(HttpStatus status, String detail, HttpServletRequest request) {
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
    problem.setTitle(status.getReasonPhrase());
    problem.setInstance(URI.create(request.getRequestURI()));
    return problem;
  }
}
