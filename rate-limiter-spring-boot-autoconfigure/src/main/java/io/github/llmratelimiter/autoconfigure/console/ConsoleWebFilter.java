package io.github.llmratelimiter.autoconfigure.console;

import org.springframework.core.Ordered;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The console on WebFlux: a filter that answers the console's paths from memory (never blocking)
 * and passes every other request on. It runs last among the filters, after any security filter.
 */
final class ConsoleWebFilter implements WebFilter, Ordered {

  private final ConsolePage page;

  ConsoleWebFilter(ConsolePage page) {
    this.page = page;
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    ServerHttpRequest request = exchange.getRequest();
    String path = request.getPath().pathWithinApplication().value();
    if (!ConsolePage.owns(path)) {
      return chain.filter(exchange);
    }
    String method = request.getMethod().name();
    ConsolePage.Answer answer = page.answer(method, path, request.getPath().contextPath().value());
    ServerHttpResponse response = exchange.getResponse();
    response.setStatusCode(HttpStatus.valueOf(answer.status()));
    response.getHeaders().setContentType(MediaType.parseMediaType(answer.contentType()));
    answer.headers().forEach(response.getHeaders()::set);
    response.getHeaders().setContentLength(answer.body().length);
    if (method.equals("HEAD")) {
      return response.setComplete();
    }
    return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(answer.body())));
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }
}
