package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitHeaders;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.util.context.ContextView;

/**
 * The reactive side of key resolution, shared by the filter and the {@code @RateLimited} aspect: a
 * request's {@link RateLimitContext} lives in one exchange attribute ({@link ReactiveContexts}), so
 * a request is charged once whichever of them gets there first; the key and model come from the
 * application's {@link ReactiveRateLimitKeyResolver}, the model from the source of the route that
 * matched the request, else the default source.
 */
final class ExchangeRequestSupport implements ReactiveRateLimitRequestSupport {

  private final ReactiveRateLimitKeyResolver resolver;
  private final RateLimitGateway gateway;

  ExchangeRequestSupport(ReactiveRateLimitKeyResolver resolver, RateLimitGateway gateway) {
    this.resolver = resolver;
    this.gateway = gateway;
  }

  @Override
  public @Nullable RateLimitRequestSupport of(ContextView context) {
    ServerWebExchange exchange = ReactiveContexts.exchange(context);
    return exchange == null ? null : new Bound(exchange);
  }

  /** The key a request is charged to: its API key (or the anonymous key, or a 401), and its model. */
  RateLimitKey resolveKey(ServerWebExchange exchange) {
    String apiKey = gateway.apiKey(resolver.resolveApiKey(exchange));
    return RateLimitKey.of(apiKey, model(exchange));
  }

  private @Nullable String model(ServerWebExchange exchange) {
    return resolver.resolveModel(exchange, ReactiveContexts.get(exchange, gateway).modelSource());
  }

  /** Writes an admitted call's headers, unless the response is committed. */
  static void writeHeaders(ServerHttpResponse response, RateLimitOutcome outcome) {
    if (!response.isCommitted() && outcome.decision().allowed()) {
      RateLimitHeaders.write(outcome, response.getHeaders()::set);
    }
  }

  /** The support of one exchange's request. */
  private final class Bound implements RateLimitRequestSupport {

    private final ServerWebExchange exchange;

    Bound(ServerWebExchange exchange) {
      this.exchange = exchange;
    }

    @Override
    public Object currentRequest() {
      return exchange.getRequest();
    }

    @Override
    public RateLimitContext currentContext() {
      return ReactiveContexts.get(exchange, gateway);
    }

    @Override
    public @Nullable String currentCredential() {
      return resolver.resolveApiKey(exchange);
    }

    @Override
    public @Nullable String currentModel() {
      return model(exchange);
    }

    @Override
    public void writeHeaders(RateLimitOutcome outcome) {
      ExchangeRequestSupport.writeHeaders(exchange.getResponse(), outcome);
    }
  }
}
