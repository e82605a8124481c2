package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.gateway.RateLimitContext;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.web.server.ServerWebExchange;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * Keeps a request's {@link RateLimitContext} in the one exchange attribute {@link #ATTRIBUTE}, where
 * every part of the reactive adapter (the filter, the key resolver, the aspect's support, the usage
 * tracking) finds the same one; and the exchange in the Reactor context of everything the filter
 * chain subscribes to, where the {@code @RateLimited} aspect finds it.
 */
final class ReactiveContexts {

  /** The exchange attribute that holds the context. */
  static final String ATTRIBUTE = RateLimitContext.class.getName();

  /** The exchange attribute that holds the {@code model} values of a form body, once read. */
  static final String FORM_MODELS = ReactiveContexts.class.getName() + ".FORM_MODELS";

  /** The key of the exchange in a subscriber's context. */
  private static final String EXCHANGE = ReactiveContexts.class.getName() + ".EXCHANGE";

  private ReactiveContexts() {}

  /** The request's context, created from its declared length and content type on first use. */
  static RateLimitContext get(ServerWebExchange exchange, RateLimitGateway gateway) {
    if (exchange.getAttribute(ATTRIBUTE) instanceof RateLimitContext context) {
      return context;
    }
    HttpHeaders headers = exchange.getRequest().getHeaders();
    RateLimitContext context = gateway.context(headers.getContentLength(),
        headers.getFirst(HttpHeaders.CONTENT_TYPE));
    exchange.getAttributes().put(ATTRIBUTE, context);
    return context;
  }

  /** The request's context, or {@code null} when nothing created one. */
  static @Nullable RateLimitContext find(ServerWebExchange exchange) {
    return exchange.getAttribute(ATTRIBUTE) instanceof RateLimitContext context ? context : null;
  }

  /** The {@code model} values of the request's form body, or an empty list when none were read. */
  static List<String> formModels(ServerWebExchange exchange) {
    List<String> values = exchange.getAttribute(FORM_MODELS);
    return values == null ? List.of() : values;
  }

  /** A subscriber context that carries the exchange. */
  static Context with(Context context, ServerWebExchange exchange) {
    return context.put(EXCHANGE, exchange);
  }

  /** The exchange a subscriber's context carries, or {@code null}. */
  static @Nullable ServerWebExchange exchange(ContextView context) {
    return context.getOrDefault(EXCHANGE, null);
  }
}
