package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.gateway.ModelSource;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.web.server.ServerWebExchange;

/**
 * Finds who is calling and which model a request names, in a reactive (WebFlux) application. Define
 * a bean of this type to replace the default, which reads the API key from {@code Authorization:
 * Bearer <key>} or {@code X-API-Key} (rejecting a request whose keys differ) and the model from the
 * source a route chose ({@link ModelSource}): the JSON body's {@code "model"} (or a form body's
 * {@code model} field), else the {@code model} query parameter. It is the reactive counterpart of
 * {@link io.github.llmratelimiter.autoconfigure.servlet.RateLimitKeyResolver}, and reads the same.
 *
 * <p>The resolver must read the same credential as the application's authentication: a request is
 * charged to the key this resolver returns. It is called on the request's event loop and must not
 * block.
 */
public interface ReactiveRateLimitKeyResolver {

  /**
   * Returns a resolver that takes the caller's key from the application (for example an attribute
   * its authentication filter set) and the model as the default resolver does.
   *
   * <pre>{@code
   * @Bean
   * ReactiveRateLimitKeyResolver reactiveRateLimitKeyResolver() {
   *   return ReactiveRateLimitKeyResolver.apiKeyFrom(exchange ->
   *       exchange.getRequest().getHeaders().getFirst("X-Tenant"));
   * }
   * }</pre>
   *
   * @param apiKey finds the caller's key, or returns {@code null} when the request has none
   * @return the resolver
   * @throws IllegalArgumentException if {@code apiKey} is null
   */
  static ReactiveRateLimitKeyResolver apiKeyFrom(Function<ServerWebExchange, @Nullable String> apiKey) {
    if (apiKey == null) {
      throw new IllegalArgumentException("apiKey must not be null");
    }
    return new DefaultReactiveRateLimitKeyResolver(apiKey);
  }

  /**
   * Returns the caller's API key.
   *
   * @param exchange the request's exchange
   * @return the key, or {@code null} (or blank) when the request carries none
   * @throws io.github.llmratelimiter.gateway.InvalidRateLimitRequestException if the request's
   *     credentials are ambiguous (a 400 problem response; nothing is charged)
   */
  @Nullable String resolveApiKey(ServerWebExchange exchange);

  /**
   * Returns the model the request names, read from the source that the request's route chose
   * ({@code ratelimiter.web.routes[n].model-source}); the default names none.
   *
   * @param exchange the request's exchange; a JSON body the limiter read is in its {@link
   *     io.github.llmratelimiter.gateway.RateLimitContext}
   * @param source where the model is read
   * @return the model, or {@code null} when the source names none
   * @throws io.github.llmratelimiter.gateway.InvalidRateLimitRequestException if the source
   *     names the model ambiguously or malformed (a 400 problem response; nothing is charged)
   */
  default @Nullable String resolveModel(ServerWebExchange exchange, ModelSource source) {
    return null;
  }
}
