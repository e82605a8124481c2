package io.github.llmratelimiter.gateway.scg.reactive;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.Mono;

/**
 * A Spring Cloud Gateway reactive application whose routes (proxy {@code /v1/**} to an
 * OpenAI-compatible upstream) and rate limits are properties only: {@code application-filter.yml}
 * limits them with the {@code RequestRateLimiter} filter, {@code application-routes.yml} with {@code
 * ratelimiter.web.routes}. The upstream's URI is set by the tests.
 */
@SpringBootApplication
public class ScgReactiveGatewayApplication {

  /**
   * The application's own key resolver, as a gateway limited by Spring Cloud Gateway's {@code
   * RedisRateLimiter} has one: the caller's {@code X-API-Key}.
   *
   * @return the resolver
   */
  @Bean
  KeyResolver apiKeyResolver() {
    return exchange -> Mono.justOrEmpty(exchange.getRequest().getHeaders().getFirst("X-API-Key"));
  }

  /**
   * Starts the gateway.
   *
   * @param args command-line arguments
   */
  public static void main(String[] args) {
    SpringApplication.run(ScgReactiveGatewayApplication.class, args);
  }
}
