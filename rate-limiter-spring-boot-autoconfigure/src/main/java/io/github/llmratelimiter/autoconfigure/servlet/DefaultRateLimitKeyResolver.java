package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.gateway.internal.BodyModel;
import io.github.llmratelimiter.gateway.internal.HttpFields;
import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.ModelSource;
import io.github.llmratelimiter.gateway.RateLimitContext;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The default resolver.
 *
 * <p><b>The API key</b> is the token of {@code Authorization: Bearer <key>} or the value of {@code
 * X-API-Key}. A request that carries more than one different key (a Bearer token and an {@code
 * X-API-Key} that differ, or two headers of one kind that differ) is rejected with {@link
 * InvalidRateLimitRequestException} (a 400), never charged to either: the application's
 * authentication may read the other one. The same key sent twice is that key. A {@code Bearer}
 * without a token, a blank {@code X-API-Key} and an {@code Authorization} of another scheme carry
 * no key ({@link HttpFields#apiKey}). {@link RateLimitKeyResolver#apiKeyFrom} replaces this part and
 * keeps the model's.
 *
 * <p><b>The model</b> is read from the {@link ModelSource} the route chose: a JSON body's top-level
 * {@code "model"} (buffered by {@link ModelPeekingFilter} into the request's {@link
 * RateLimitContext}), a form body's {@code model} field, or the
 * query string's {@code model} parameter. In a JSON body, a {@code "model"} that is not a string is
 * rejected (400), a {@code null} one counts as absent; a body that is not a JSON object names no
 * model (the handler reports it) and, since it may still carry one, lets no query parameter in
 * either. A {@code model} given more than once with different values in the query, or in a form
 * body, is rejected (400).
 */
final class DefaultRateLimitKeyResolver implements RateLimitKeyResolver {

  /** The application's own way to find the key, or {@code null} for the headers above. */
  private final @Nullable Function<HttpServletRequest, @Nullable String> apiKey;

  DefaultRateLimitKeyResolver() {
    this(null);
  }

  DefaultRateLimitKeyResolver(@Nullable Function<HttpServletRequest, @Nullable String> apiKey) {
    this.apiKey = apiKey;
  }

  @Override
  public @Nullable String resolveApiKey(HttpServletRequest request) {
    if (apiKey != null) {
      return apiKey.apply(request);
    }
    return HttpFields.apiKey(values(request.getHeaders(HttpFields.AUTHORIZATION)),
        values(request.getHeaders(HttpFields.API_KEY_HEADER)));
  }

  private static List<String> values(@Nullable Enumeration<String> headers) {
    return headers == null ? List.of() : Collections.list(headers);
  }

  @Override
  public @Nullable String resolveModel(HttpServletRequest request) {
    return resolveModel(request, ModelSource.BODY_THEN_QUERY);
  }

  @Override
  public @Nullable String resolveModel(HttpServletRequest request, ModelSource source) {
    return source.model(() -> bodyModel(request), () -> queryModel(request));
  }

  private static BodyModel bodyModel(HttpServletRequest request) {
    String contentType = request.getContentType();
    if (contentType == null) {
      return BodyModel.NONE;
    }
    if (HttpFields.isForm(contentType)) {
      List<String> values = formValues(request);
      return values.isEmpty() ? BodyModel.NONE
          : new BodyModel(true, HttpFields.oneModel(values, "form field"));
    }
    RateLimitContext context = ServletContexts.find(request);
    // no context: nothing buffered the body (a method without one, or a route that reads none)
    return context == null ? BodyModel.NONE : context.jsonBodyModel();
  }

  private static @Nullable String queryModel(HttpServletRequest request) {
    return HttpFields.oneModel(HttpFields.queryModels(request.getQueryString()), "query parameter");
  }

  /**
   * A form body's {@code model} values: the request's parameters less those of the query string
   * (the container merges both).
   */
  private static List<String> formValues(HttpServletRequest request) {
    String[] all = request.getParameterValues(HttpFields.MODEL);
    List<String> values = all == null ? new ArrayList<>() : new ArrayList<>(Arrays.asList(all));
    for (String q : HttpFields.queryModels(request.getQueryString())) {
      values.remove(q);
    }
    return values;
  }
}
