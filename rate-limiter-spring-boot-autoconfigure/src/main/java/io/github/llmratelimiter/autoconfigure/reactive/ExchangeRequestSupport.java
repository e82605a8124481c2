package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.internal.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes.Route;
import io.github.llmratelimiter.autoconfigure.RouteKeyRequest;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.gateway.internal.HttpFields;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitHeaders;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.net.InetSocketAddress;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;
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

  /**
   * The key a route charges a request to: the caller its key source finds (its API key by default;
   * else the anonymous key, or a 401 or 400), with its model. The principal, which the exchange
   * resolves asynchronously, is resolved first when the route needs it.
   */
  Mono<RateLimitKey> resolveKey(ServerWebExchange exchange, Route route) {
    if (!route.needsPrincipal()) {
      return Mono.fromCallable(() -> resolveKey(exchange, route, null));
    }
    return exchange.getPrincipal()
        .map(principal -> Optional.ofNullable(principal.getName()))
        .defaultIfEmpty(Optional.empty())
        .map(name -> resolveKey(exchange, route, name.orElse(null)));
  }

  /**
   * The key a route that does not need the principal charges a request to, resolved at once.
   *
   * @throws IllegalArgumentException if the route needs the principal
   */
  RateLimitKey resolveKeyNow(ServerWebExchange exchange, Route route) {
    if (route.needsPrincipal()) {
      throw new IllegalArgumentException("route must not need the principal, but keys on "
          + route.keySource());
    }
    return resolveKey(exchange, route, null);
  }

  private RateLimitKey resolveKey(ServerWebExchange exchange, Route route, @Nullable String principal) {
    String caller = route.keySource() == KeySource.API_KEY
        ? gateway.apiKey(resolver.resolveApiKey(exchange))
        : gateway.callerKey(route.keySource(), route.keyValue(exchange.getRequest(),
            view(exchange.getRequest(), principal)));
    return RateLimitKey.of(caller, model(exchange));
  }

  /** The request as a route's key expression sees it. */
  private static RouteKeyRequest view(ServerHttpRequest request, @Nullable String principal) {
    InetSocketAddress remote = request.getRemoteAddress();
    String address = remote == null ? null
        : remote.getAddress() != null ? remote.getAddress().getHostAddress() : remote.getHostString();
    HttpHeaders headers = request.getHeaders();
    return new RouteKeyRequest(request.getMethod().name(),
        request.getPath().pathWithinApplication().value(), HttpFields.clientAddress(address),
        principal, name -> RouteKeyRequest.oneValue(headers.get(name)));
  }

  private @Nullable String model(ServerWebExchange exchange) {
    return resolver.resolveModel(exchange, ReactiveContexts.get(exchange, gateway).modelSource());
  }

  /** Writes an admitted call's headers, unless the response is committed. */
  static void writeHeaders(ServerHttpResponse response, RateLimitOutcome outcome) {
    if (!response.isCommitted() && outcome.decision().allowed()) {
      RateLimitHeaders.write(outcome, ResponseHeaderSink.of(response));
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
