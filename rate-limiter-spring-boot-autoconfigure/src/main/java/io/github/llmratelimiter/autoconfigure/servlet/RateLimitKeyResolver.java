package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.ModelSource;
import jakarta.servlet.http.HttpServletRequest;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Finds who is calling and which model a request names. Define a bean of this type to replace the
 * default, which reads the API key from {@code Authorization: Bearer <key>} or {@code X-API-Key}
 * (rejecting a request whose keys differ) and the model from the JSON body's {@code "model"}, else
 * the {@code model} query parameter, or from the source a route chose ({@link ModelSource}).
 *
 * <p>The resolver must read the same credential as the application's authentication: a request is
 * charged to the key this resolver returns, so a key the application does not authenticate by is a
 * budget the caller picks. Replace it when the application authenticates otherwise (a session, a
 * client certificate, another header), for example with {@link #apiKeyFrom}.
 */
public interface RateLimitKeyResolver {

  /**
   * Returns a resolver that takes the caller's key from the application (for example the
   * authenticated principal) and the model as the default resolver does.
   *
   * <pre>{@code
   * @Bean
   * RateLimitKeyResolver rateLimitKeyResolver() {
   *   return RateLimitKeyResolver.apiKeyFrom(request ->
   *       request.getUserPrincipal() == null ? null : request.getUserPrincipal().getName());
   * }
   * }</pre>
   *
   * @param apiKey finds the caller's key, or returns {@code null} when the request has none
   * @return the resolver
   * @throws IllegalArgumentException if {@code apiKey} is null
   */
  static RateLimitKeyResolver apiKeyFrom(Function<HttpServletRequest, @Nullable String> apiKey) {
    if (apiKey == null) {
      throw new IllegalArgumentException("apiKey must not be null");
    }
    return new DefaultRateLimitKeyResolver(apiKey);
  }

  /**
   * Returns the caller's API key.
   *
   * @param request the request
   * @return the key, or {@code null} (or blank) when the request carries none
   * @throws io.github.llmratelimiter.gateway.InvalidRateLimitRequestException if the request's
   *     credentials are ambiguous (a 400 problem response; nothing is charged)
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

  /**
   * Returns the model the request names, read from the source that the request's route chose
   * ({@code ratelimiter.web.routes[n].model-source}); the default ignores the source but for
   * {@link ModelSource#NONE} and asks {@link #resolveModel(HttpServletRequest)}.
   *
   * @param request the request
   * @param source where the model is read
   * @return the model, or {@code null} when the source names none
   * @throws io.github.llmratelimiter.gateway.InvalidRateLimitRequestException if the source
   *     names the model ambiguously or malformed (a 400 problem response; nothing is charged)
   */
  default @Nullable String resolveModel(HttpServletRequest request, ModelSource source) {
    return source == ModelSource.NONE ? null : resolveModel(request);
  }
}
