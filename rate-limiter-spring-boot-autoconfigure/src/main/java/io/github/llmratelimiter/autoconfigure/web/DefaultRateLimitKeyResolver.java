package io.github.llmratelimiter.autoconfigure.web;

import jakarta.servlet.http.HttpServletRequest;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The default resolver: the API key from {@code Authorization: Bearer} or {@code X-API-Key}; the
 * model from the {@code model} query parameter, else the top-level {@code "model"} string of a JSON
 * body that {@link ModelPeekingFilter} buffered. A malformed body yields no model (the handler
 * reports it), never an error here.
 */
final class DefaultRateLimitKeyResolver implements RateLimitKeyResolver {

  static final String API_KEY_HEADER = "X-API-Key";
  private static final String BEARER = "bearer ";
  private static final String MODEL_ATTRIBUTE = DefaultRateLimitKeyResolver.class.getName() + ".model";
  private static final String NO_MODEL = "";

  @Override
  public @Nullable String resolveApiKey(HttpServletRequest request) {
    String authorization = request.getHeader("Authorization");
    if (authorization != null && authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      String token = authorization.substring(BEARER.length()).trim();
      if (!token.isEmpty()) {
        return token;
      }
    }
    String header = request.getHeader(API_KEY_HEADER);
    return header == null || header.isBlank() ? null : header.trim();
  }

  @Override
  public @Nullable String resolveModel(HttpServletRequest request) {
    String param = request.getParameter("model");
    if (param != null && !param.isBlank()) {
      return param;
    }
    Object cached = request.getAttribute(MODEL_ATTRIBUTE);
    if (cached instanceof String s) {
      return s == NO_MODEL ? null : s;
    }
    String model = modelFromBody(request);
    request.setAttribute(MODEL_ATTRIBUTE, model == null ? NO_MODEL : model);
    return model;
  }

  private static @Nullable String modelFromBody(HttpServletRequest request) {
    Map<String, Object> map = Json.requestBody(request);
    return map != null && map.get("model") instanceof String s && !s.isBlank() ? s : null;
  }
}
