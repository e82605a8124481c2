package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitRequestException;
import io.github.llmratelimiter.autoconfigure.ModelSource;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
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
 * no key. {@link RateLimitKeyResolver#apiKeyFrom} replaces this part and keeps the model's.
 *
 * <p><b>The model</b> is read from the {@link ModelSource} the route chose: a JSON body's top-level
 * {@code "model"} (buffered by {@link ModelPeekingFilter}), a form body's {@code model} field, or the
 * query string's {@code model} parameter. In a JSON body, a {@code "model"} that is not a string is
 * rejected (400), a {@code null} one counts as absent; a body that is not a JSON object names no
 * model (the handler reports it) and, since it may still carry one, lets no query parameter in
 * either. A {@code model} given more than once with different values in the query, or in a form
 * body, is rejected (400).
 */
final class DefaultRateLimitKeyResolver implements RateLimitKeyResolver {

  static final String API_KEY_HEADER = "X-API-Key";
  private static final String AUTHORIZATION = "Authorization";
  private static final String BEARER = "bearer";
  private static final String MODEL = "model";

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
    String key = null;
    for (Enumeration<String> e = request.getHeaders(AUTHORIZATION); e != null && e.hasMoreElements(); ) {
      key = same(key, bearerToken(e.nextElement()));
    }
    for (Enumeration<String> e = request.getHeaders(API_KEY_HEADER); e != null && e.hasMoreElements(); ) {
      String header = e.nextElement();
      key = same(key, header == null || header.isBlank() ? null : header.trim());
    }
    return key;
  }

  /** The token of a {@code Bearer} authorization, or {@code null} for another scheme or none. */
  private static @Nullable String bearerToken(@Nullable String authorization) {
    if (authorization == null) {
      return null;
    }
    String value = authorization.trim();
    if (!value.regionMatches(true, 0, BEARER, 0, BEARER.length())
        || (value.length() > BEARER.length() && !Character.isWhitespace(value.charAt(BEARER.length())))) {
      return null;
    }
    String token = value.substring(BEARER.length()).trim();
    return token.isEmpty() ? null : token;
  }

  /** The one key of a request: the first found, unless another differs. */
  private static @Nullable String same(@Nullable String found, @Nullable String next) {
    if (found == null) {
      return next;
    }
    if (next != null && !next.equals(found)) {
      throw new InvalidRateLimitRequestException("The request carries more than one API key "
          + "(Authorization: Bearer and X-API-Key, or one of them twice, with different values): "
          + "send one", null);
    }
    return found;
  }

  @Override
  public @Nullable String resolveModel(HttpServletRequest request) {
    return resolveModel(request, ModelSource.BODY_THEN_QUERY);
  }

  @Override
  public @Nullable String resolveModel(HttpServletRequest request, ModelSource source) {
    return switch (source) {
      case NONE -> null;
      case QUERY -> queryModel(request);
      case BODY -> bodyModel(request).model();
      case BODY_THEN_QUERY -> {
        BodyModel body = bodyModel(request);
        yield body.named() ? body.model() : queryModel(request);
      }
    };
  }

  /**
   * What the body says about the model: whether it names one (or may, when it cannot be read as a
   * JSON object) and which.
   */
  private record BodyModel(boolean named, @Nullable String model) {

    static final BodyModel NONE = new BodyModel(false, null);
  }

  private static BodyModel bodyModel(HttpServletRequest request) {
    String contentType = request.getContentType();
    if (contentType == null) {
      return BodyModel.NONE;
    }
    if (ModelPeekingFilter.isForm(contentType)) {
      List<String> values = formValues(request);
      return values.isEmpty() ? BodyModel.NONE : new BodyModel(true, one(values, "form field"));
    }
    if (!ModelPeekingFilter.containsJson(contentType) || ModelPeekingFilter.length(request) == 0) {
      return BodyModel.NONE;
    }
    if (ModelPeekingFilter.body(request) == null) {
      return BodyModel.NONE; // not buffered: a method without a body, or a route that reads none
    }
    Map<String, Object> map = Json.requestBody(request);
    if (map == null) {
      return new BodyModel(true, null); // not a JSON object: the handler rejects it
    }
    Object model = map.get(MODEL);
    if (model == null) {
      return BodyModel.NONE;
    }
    if (!(model instanceof String s)) {
      throw new InvalidRateLimitRequestException("the body's \"model\" must be a string, but was a "
          + (model instanceof Map ? "JSON object" : model instanceof List ? "JSON array" : "JSON "
              + (model instanceof Boolean ? "boolean" : "number")), null);
    }
    return new BodyModel(true, s.isBlank() ? null : s);
  }

  /** The query string's {@code model} values, decoded as the container decodes them (UTF-8). */
  private static List<String> queryValues(HttpServletRequest request) {
    String query = request.getQueryString();
    List<String> values = new ArrayList<>(1);
    if (query == null || query.isEmpty()) {
      return values;
    }
    for (String pair : query.split("&")) {
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq));
      if (MODEL.equals(name)) {
        values.add(eq < 0 ? "" : decode(pair.substring(eq + 1)));
      }
    }
    return values;
  }

  private static String decode(String s) {
    try {
      return URLDecoder.decode(s, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return s; // a malformed escape: compared as sent
    }
  }

  private static @Nullable String queryModel(HttpServletRequest request) {
    return one(queryValues(request), "query parameter");
  }

  /**
   * A form body's {@code model} values: the request's parameters less those of the query string
   * (the container merges both).
   */
  private static List<String> formValues(HttpServletRequest request) {
    String[] all = request.getParameterValues(MODEL);
    List<String> values = all == null ? new ArrayList<>() : new ArrayList<>(Arrays.asList(all));
    for (String q : queryValues(request)) {
      values.remove(q);
    }
    return values;
  }

  /** The one non-blank value, or {@code null} when there is none. */
  private static @Nullable String one(List<String> values, String where) {
    String model = null;
    for (String v : values) {
      if (v == null || v.isBlank()) {
        continue;
      }
      if (model != null && !model.equals(v)) {
        throw new InvalidRateLimitRequestException("the request names more than one model in its "
            + "\"model\" " + where + " (" + quoteAll(values) + ")", null);
      }
      model = v;
    }
    return model;
  }

  private static String quoteAll(List<String> values) {
    String joined = String.join(", ", values);
    return joined.length() > 80 ? joined.substring(0, 80) + "..." : joined;
  }
}
