package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.gateway.internal.BodyModel;
import io.github.llmratelimiter.gateway.internal.HttpFields;
import io.github.llmratelimiter.gateway.ModelSource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.ServerWebExchange;

/**
 * The default reactive resolver, which reads what the servlet one does, through the gateway's
 * {@link HttpFields}: the API key from {@code Authorization: Bearer} and {@code X-API-Key} (two
 * different keys are a 400); the model from the route's {@link ModelSource}: a JSON body's
 * top-level {@code "model"} (read by the filter into the request's {@link RateLimitContext}), a
 * form body's {@code model} field (read by the filter from the exchange's form data), or the query
 * string's {@code model} parameter.
 */
final class DefaultReactiveRateLimitKeyResolver implements ReactiveRateLimitKeyResolver {

  /** The application's own way to find the key, or {@code null} for the headers above. */
  private final @Nullable Function<ServerWebExchange, @Nullable String> apiKey;

  DefaultReactiveRateLimitKeyResolver() {
    this(null);
  }

  DefaultReactiveRateLimitKeyResolver(@Nullable Function<ServerWebExchange, @Nullable String> apiKey) {
    this.apiKey = apiKey;
  }

  @Override
  public @Nullable String resolveApiKey(ServerWebExchange exchange) {
    if (apiKey != null) {
      return apiKey.apply(exchange);
    }
    HttpHeaders headers = exchange.getRequest().getHeaders();
    return HttpFields.apiKey(headers.getOrEmpty(HttpFields.AUTHORIZATION),
        headers.getOrEmpty(HttpFields.API_KEY_HEADER));
  }

  @Override
  public @Nullable String resolveModel(ServerWebExchange exchange, ModelSource source) {
    return source.model(() -> bodyModel(exchange), () -> queryModel(exchange.getRequest()));
  }

  private static BodyModel bodyModel(ServerWebExchange exchange) {
    String contentType = exchange.getRequest().getHeaders().getFirst(HttpHeaders.CONTENT_TYPE);
    if (contentType == null) {
      return BodyModel.NONE;
    }
    if (HttpFields.isForm(contentType)) {
      List<String> values = ReactiveContexts.formModels(exchange);
      return values.isEmpty() ? BodyModel.NONE
          : new BodyModel(true, HttpFields.oneModel(values, "form field"));
    }
    RateLimitContext context = ReactiveContexts.find(exchange);
    // no context: nothing buffered the body (a request no route or handler limits)
    return context == null ? BodyModel.NONE : context.jsonBodyModel();
  }

  private static @Nullable String queryModel(ServerHttpRequest request) {
    return HttpFields.oneModel(HttpFields.queryModels(request.getURI().getRawQuery()), "query parameter");
  }
}
