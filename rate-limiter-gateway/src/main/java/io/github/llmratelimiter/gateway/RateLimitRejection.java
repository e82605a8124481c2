package io.github.llmratelimiter.gateway;

import java.util.List;

/**
 * The response a front door sends instead of serving a request: the problem body and the headers
 * that go with it ({@code RateLimit}, {@code Retry-After}, {@code WWW-Authenticate}, ...), as data.
 * {@link RateLimitGateway#reject} builds it from the limiter's exceptions.
 *
 * @param problem the problem body, whose status is the response's
 * @param headers the headers, in order
 */
public record RateLimitRejection(RateLimitProblem problem, List<ResponseHeader> headers) {

  /**
   * Validates the rejection and copies the headers.
   *
   * @throws IllegalArgumentException if an argument is null
   */
  public RateLimitRejection {
    if (problem == null || headers == null) {
      throw new IllegalArgumentException("problem and headers must not be null");
    }
    headers = List.copyOf(headers);
  }

  /**
   * Returns the response's status.
   *
   * @return the problem's status
   */
  public int status() {
    return problem.status();
  }
}
