package io.github.llmratelimiter.autoconfigure.cloudgateway;

import io.github.llmratelimiter.gateway.internal.HttpFields;
import io.github.llmratelimiter.gateway.MissingApiKeyException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.http.HttpHeaders;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * A {@link KeyResolver} that reads the API key as the limiter's web adapters do ({@link
 * HttpFields#apiKey}): the token of {@code Authorization: Bearer <key>} or the value of {@code
 * X-API-Key}. A request without one resolves to the anonymous key when missing keys are anonymous,
 * else to nothing (the {@code RequestRateLimiter} filter then answers with its empty-key status); a
 * request with two different keys is an error signal carrying {@link
 * io.github.llmratelimiter.gateway.InvalidRateLimitRequestException} (a 400), charged to neither.
 */
final class ApiKeyResolver implements KeyResolver {

  private final RateLimitGateway gateway;

  ApiKeyResolver(RateLimitGateway gateway) {
    this.gateway = gateway;
  }

  @Override
  public Mono<String> resolve(ServerWebExchange exchange) {
    return Mono.defer(() -> {
      HttpHeaders headers = exchange.getRequest().getHeaders();
      String key = HttpFields.apiKey(headers.getOrEmpty(HttpFields.AUTHORIZATION),
          headers.getOrEmpty(HttpFields.API_KEY_HEADER));
      if (key != null) {
        return Mono.just(key);
      }
      try {
        return Mono.just(gateway.apiKey(null));
      } catch (MissingApiKeyException e) {
        return Mono.empty();
      }
    });
  }
}
