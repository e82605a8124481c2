package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.RateLimitProblem;
import io.github.llmratelimiter.gateway.RateLimitRejection;
import io.github.llmratelimiter.gateway.ResponseHeader;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/**
 * Turns the gateway's problem data into Spring's {@link ProblemDetail}, which Spring MVC and Spring
 * WebFlux write as {@code application/problem+json}: the standard members (a {@link
 * RateLimitProblem#BLANK_TYPE blank type} left out, as Spring leaves it out), then the extension
 * members in order, so that every stack sends the same body.
 */
public final class RateLimitProblemDetails {

  private RateLimitProblemDetails() {}

  /**
   * Returns the problem as a {@link ProblemDetail}.
   *
   * @param problem the problem
   * @return a new problem detail with the same status, type, title, detail, instance and members
   */
  public static ProblemDetail of(RateLimitProblem problem) {
    ProblemDetail detail = ProblemDetail.forStatus(problem.status());
    if (!RateLimitProblem.BLANK_TYPE.equals(problem.type())) {
      detail.setType(problem.type()); // left unset, the blank type is implied and not written
    }
    detail.setTitle(problem.title());
    detail.setDetail(problem.detail());
    detail.setInstance(problem.instance());
    problem.members().forEach(detail::setProperty);
    return detail;
  }

  /**
   * Returns the response that answers a rejection, on any stack: its status, its headers in order,
   * {@code application/problem+json}, and the problem as a {@link ProblemDetail}.
   *
   * @param rejection the rejection
   * @return the response entity
   */
  public static ResponseEntity<ProblemDetail> response(RateLimitRejection rejection) {
    ResponseEntity.BodyBuilder response = ResponseEntity.status(rejection.status())
        .contentType(MediaType.APPLICATION_PROBLEM_JSON);
    for (ResponseHeader header : rejection.headers()) {
      response.header(header.name(), header.value());
    }
    return response.body(of(rejection.problem()));
  }
}
