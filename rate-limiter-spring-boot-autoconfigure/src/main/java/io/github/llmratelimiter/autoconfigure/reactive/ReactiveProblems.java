package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.servlet.RateLimitProblemDetails;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitRejection;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.codec.HttpMessageWriter;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.reactive.result.view.ViewResolver;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Writes the gateway's rejections (429, 401, 400, 413, 503) on a reactive response, outside any
 * handler: the status, the headers in order, and the problem as {@code application/problem+json}
 * through the application's codecs, the same body a handler's {@code ResponseEntity<ProblemDetail>}
 * gets ({@link RateLimitProblemDetails#response}).
 */
final class ReactiveProblems {

  private final RateLimitGateway gateway;
  private final ServerResponse.Context context;

  ReactiveProblems(RateLimitGateway gateway, List<HttpMessageWriter<?>> writers) {
    this.gateway = gateway;
    List<HttpMessageWriter<?>> messageWriters = List.copyOf(writers);
    this.context = new ServerResponse.Context() {
      @Override
      public List<HttpMessageWriter<?>> messageWriters() {
        return messageWriters;
      }

      @Override
      public List<ViewResolver> viewResolvers() {
        return List.of();
      }
    };
  }

  /**
   * Writes the response that answers a failure of the limiter's, unless the response is committed.
   *
   * @return the write, or {@code null} when the failure is not the limiter's or the response is
   *     committed: the caller passes it on
   */
  @Nullable Mono<Void> write(ServerWebExchange exchange, Throwable failure) {
    if (exchange.getResponse().isCommitted()) {
      return null;
    }
    RateLimitRejection rejection =
        gateway.reject(failure, exchange.getRequest().getURI().getRawPath());
    if (rejection == null) {
      return null;
    }
    ResponseEntity<ProblemDetail> entity = RateLimitProblemDetails.response(rejection);
    ProblemDetail body = entity.getBody();
    return ServerResponse.status(entity.getStatusCode())
        .headers(headers -> headers.addAll(entity.getHeaders()))
        .bodyValue(body == null ? ProblemDetail.forStatus(entity.getStatusCode()) : body)
        .flatMap(response -> response.writeTo(exchange, context));
  }
}
