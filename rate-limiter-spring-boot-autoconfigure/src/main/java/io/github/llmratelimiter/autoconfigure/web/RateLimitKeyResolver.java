package io.github.llmratelimiter.autoconfigure.web;

import jakarta.servlet.http.HttpServletRequest;
import org.jspecify.annotations.Nullable;

/**
 * Finds who is calling and which model a request names. Define a bean of this type to replace the
 * default, which reads the API key from {@code Authorization: Bearer <key>} or {@code X-API-Key}
 * and the model from the {@code model} query parameter or the {@code "model"} field of a JSON body.
 */
public interface RateLimitKeyResolver {

  /**
   * Returns the caller's API key.
   *
   * @param request the request
   * @return the key, or {@code null} (or blank) when the request carries none
   */
  @Nullable String resolveApiKey(HttpServletRequest request);

  /**
   * Returns the model the request names.
   *
   * @param request the request
   * @return the model, or {@code null} when the request names none
   */
  default @Nullable String resolveModel(HttpServletRequest request) {
    return null;
  }
}
