package io.github.llmratelimiter.autoconfigure.reactive;

import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebExceptionHandler;
import reactor.core.publisher.Mono;

/**
 * Answers the limiter's exceptions that reach the web handler's error handling: those of a
 * functional endpoint, of another filter, or of an annotated method outside a controller. Ordered
 * before Spring Boot's error handler (-1), which would answer them with a 500.
 */
final class RateLimitWebExceptionHandler implements WebExceptionHandler, Ordered {

  /** The order: before Spring Boot's {@code ErrorWebExceptionHandler}, at -1. */
  static final int ORDER = -2;

  private final ReactiveProblems problems;

  RateLimitWebExceptionHandler(ReactiveProblems problems) {
    this.problems = problems;
  }

  @Override
  public Mono<Void> handle(ServerWebExchange exchange, Throwable failure) {
    Mono<Void> written = problems.write(exchange, failure);
    return written != null ? written : Mono.error(failure);
  }

  @Override
  public int getOrder() {
    return ORDER;
  }
}
