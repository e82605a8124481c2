package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.gateway.ModelTokenReservation;
import io.github.llmratelimiter.gateway.RateLimitContext;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Finds the {@link ModelTokenReservation} of a WebFlux request that a tokens-per-window (TPM) budget
 * admitted, so gateway code can settle it itself, without blocking: with the usage its upstream
 * client reported, or with a refund when the upstream call failed. The reactive counterpart of
 * {@link io.github.llmratelimiter.autoconfigure.servlet.ModelTokens}.
 *
 * <pre>{@code
 * return upstream.call(request)
 *     .flatMap(reply -> ReactiveModelTokens.current()
 *         .flatMap(tokens -> Mono.fromCompletionStage(tokens.reconcileAsync(reply.totalTokens())))
 *         .thenReturn(reply));
 * }</pre>
 *
 * <p>Code that does not settle it leaves it to the limiter's filter, which reads the usage of an
 * OpenAI-shaped response.
 */
public final class ReactiveModelTokens {

  private ReactiveModelTokens() {}

  /**
   * Returns the reservation of the request whose handler subscribes to the result.
   *
   * @return the reservation, or empty outside a request or when the request reserved no model
   *     tokens
   */
  public static Mono<ModelTokenReservation> current() {
    return Mono.deferContextual(subscriber -> {
      ServerWebExchange exchange = ReactiveContexts.exchange(subscriber);
      return exchange == null ? Mono.empty() : of(exchange);
    });
  }

  /**
   * Returns the reservation of a request.
   *
   * @param exchange the request's exchange
   * @return the reservation, or empty when the request reserved no model tokens
   */
  public static Mono<ModelTokenReservation> of(ServerWebExchange exchange) {
    RateLimitContext context = ReactiveContexts.find(exchange);
    return Mono.justOrEmpty(context == null ? null : context.modelTokens());
  }
}
