package io.github.llmratelimiter.autoconfigure.web;

import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.json.JsonParser;
import org.springframework.boot.json.JsonParserFactory;

/**
 * The one JSON parser the web layer shares: {@link JsonParserFactory#getJsonParser()} builds a new
 * parser (and, with Jackson, a new object mapper with cold caches) on every call, which cost more
 * per request than the whole limiter.
 */
final class Json {

  /** Thread-safe: Jackson's mapper is, and it is created before any request uses it. */
  static final JsonParser PARSER = JsonParserFactory.getJsonParser();

  static {
    // The parser creates its mapper lazily; doing it here, in the class initialiser, publishes it
    // safely to every thread.
    PARSER.parseMap("{}");
  }

  /** The request attribute that caches the parsed body (or {@link #NOT_AN_OBJECT}). */
  private static final String PARSED_BODY_ATTRIBUTE = Json.class.getName() + ".parsedBody";

  private static final Object NOT_AN_OBJECT = new Object();

  private Json() {}

  /**
   * Returns the request's JSON body as {@link ModelPeekingFilter} buffered it, parsed once per
   * request however many callers ask (the key resolver for the model, the estimator).
   *
   * @return the body's object, an empty map for an empty body, or {@code null} when no body was
   *     buffered or it is not a JSON object
   */
  static @Nullable Map<String, Object> requestBody(HttpServletRequest request) {
    Object cached = request.getAttribute(PARSED_BODY_ATTRIBUTE);
    if (cached == null) {
      if (!(request.getAttribute(ModelPeekingFilter.BODY_ATTRIBUTE) instanceof byte[] body)) {
        return null;
      }
      try {
        cached = body.length == 0 ? Map.of()
            : PARSER.parseMap(new String(body, StandardCharsets.UTF_8));
      } catch (RuntimeException e) { // JsonParseException, or a non-object body
        cached = NOT_AN_OBJECT;
      }
      request.setAttribute(PARSED_BODY_ATTRIBUTE, cached);
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> map = cached == NOT_AN_OBJECT ? null : (Map<String, Object>) cached;
    return map;
  }
}
