package io.github.llmratelimiter.autoconfigure;

import org.jspecify.annotations.Nullable;

/**
 * What the {@link RateLimited} aspect needs from the HTTP request the calling thread serves, if any:
 * the caller's key, whether the request was already charged, and where to record the outcome.
 * Provided by the web auto-configuration; absent outside a web application.
 */
public interface RateLimitRequestSupport {

  /**
   * Returns the HTTP request the calling thread serves.
   *
   * @return the request (an {@code HttpServletRequest}), or {@code null} outside a request
   */
  @Nullable Object currentRequest();

  /**
   * Rejects the current request before anything is charged when the limiter cannot charge it
   * correctly (for example a body above {@code ratelimiter.web.max-body}, or an invalid {@code
   * max_tokens}); does nothing outside a request.
   *
   * @throws RuntimeException the rejection, which the web layer turns into a 4xx problem response
   */
  default void checkRequest() {}

  /**
   * Returns whether the current request was already charged.
   *
   * @return {@code true} if a route or an annotated method charged it; {@code false} outside a
   *     request
   */
  boolean alreadyCharged();

  /**
   * Returns the model the current request names.
   *
   * @return the model, or {@code null} when it names none or outside a request
   */
  @Nullable String currentModel();

  /**
   * Resolves the current request's caller.
   *
   * @param model the model to use instead of the request's, or {@code null} to use the request's
   * @return the key
   * @throws MissingApiKeyException if the request has no API key and missing keys are rejected
   * @throws IllegalStateException outside a request
   */
  RateLimitKey resolveKey(@Nullable String model);

  /**
   * Records an outcome on the current request: marks it charged and, when allowed, writes the
   * rate-limit headers (a deny's headers are written with its 429 response).
   *
   * @param outcome the outcome
   */
  void record(RateLimitOutcome outcome);

  /**
   * Estimates the model tokens of the current request, for the tokens-per-window (TPM) budgets.
   *
   * @return the estimate; 0 outside a request
   */
  default long estimateModelTokens() {
    return 0;
  }
}
