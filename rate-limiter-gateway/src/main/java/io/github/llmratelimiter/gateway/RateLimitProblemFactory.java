package io.github.llmratelimiter.gateway;

import org.jspecify.annotations.Nullable;

/**
 * Builds the RFC 9457 problem bodies of the limiter's error responses, as data. Provide another
 * (for example extending {@link DefaultRateLimitProblemFactory}; in Spring, a bean of this type) to
 * change them; the status codes and the rate-limit headers stay as they are.
 */
public interface RateLimitProblemFactory {

  /**
   * Returns the body of a 429 response.
   *
   * @param outcome the denied outcome
   * @param path the request's path (the problem's instance), or {@code null}
   * @return the problem, with status 429
   */
  RateLimitProblem rateLimited(RateLimitOutcome outcome, @Nullable String path);

  /**
   * Returns the body of a 429 response to a call that its caller's budgets admitted but its
   * upstream did not ({@link io.github.llmratelimiter.core.Reason#UPSTREAM_LIMIT}): the provider
   * account's capacity is used, not the caller's. The default has the type {@link
   * DefaultRateLimitProblemFactory#UPSTREAM_LIMITED_TYPE}, the title "Upstream capacity
   * exhausted", and the members {@code reason}, {@code policy}, {@code upstream}, {@code
   * retryable} and {@code retryAfterMs}.
   *
   * @param outcome the denied outcome ({@link RateLimitOutcome#upstream()} is its upstream)
   * @param path the request's path (the problem's instance), or {@code null}
   * @return the problem, with status 429
   */
  default RateLimitProblem upstreamLimited(RateLimitOutcome outcome, @Nullable String path) {
    return DefaultRateLimitProblemFactory.upstreamProblem(outcome, path);
  }

  /**
   * Returns the body of a 401 response to a request without an API key.
   *
   * @param path the request's path, or {@code null}
   * @return the problem, with status 401
   */
  RateLimitProblem missingApiKey(@Nullable String path);

  /**
   * Returns the body of a 401 response to a request that is not authenticated, on a route whose
   * budget is counted per principal; the default says so, with the request path as instance.
   *
   * @param path the request's path, or {@code null}
   * @return the problem, with status 401
   */
  default RateLimitProblem missingPrincipal(@Nullable String path) {
    return RateLimitProblem.of(401,
        "The request is not authenticated: this endpoint's rate limit is counted per user.", path);
  }

  /**
   * Returns the body of a 400 response to a request the limiter cannot limit.
   *
   * @param exception what was malformed
   * @param path the request's path, or {@code null}
   * @return the problem, with status 400
   */
  RateLimitProblem invalidRequest(InvalidRateLimitRequestException exception, @Nullable String path);

  /**
   * Returns the body of a 413 response to a request whose body is larger than the limiter accepts;
   * the default has the status's reason phrase as title, the exception's message as detail and the
   * request path as instance.
   *
   * @param exception which limit the body passed
   * @param path the request's path, or {@code null}
   * @return the problem, with status 413
   */
  default RateLimitProblem bodyTooLarge(RequestBodyTooLargeException exception, @Nullable String path) {
    return RateLimitProblem.of(413, exception.getMessage(), path);
  }

  /**
   * Returns the body of a 503 response when the store failed and failures deny.
   *
   * @param exception the failure
   * @param path the request's path, or {@code null}
   * @return the problem, with status 503
   */
  RateLimitProblem storeUnavailable(RateLimitStoreUnavailableException exception, @Nullable String path);
}
