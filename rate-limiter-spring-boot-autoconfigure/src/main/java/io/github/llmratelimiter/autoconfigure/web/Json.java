package io.github.llmratelimiter.autoconfigure.web;

import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.json.JsonParser;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.util.ClassUtils;

/**
 * How the web layer reads JSON bodies: straight from their bytes with Jackson's streaming parser
 * when Jackson's core is on the class path ({@link JacksonStreamingJson}), else with one shared
 * Spring Boot {@link JsonParser} ({@link JsonParserFactory#getJsonParser()} builds a new parser, and
 * with Jackson a new object mapper with cold caches, on every call).
 */
final class Json {

  /** Whether Jackson's streaming parser is on the class path. */
  static final boolean STREAMING =
      ClassUtils.isPresent("tools.jackson.core.json.JsonFactory", Json.class.getClassLoader());

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
      byte[] body = ModelPeekingFilter.body(request);
      if (body == null) {
        return null;
      }
      Map<String, Object> parsed = body.length == 0 ? Map.of() : parseObject(body, 0, body.length);
      cached = parsed == null ? NOT_AN_OBJECT : parsed;
      request.setAttribute(PARSED_BODY_ATTRIBUTE, cached);
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> map = cached == NOT_AN_OBJECT ? null : (Map<String, Object>) cached;
    return map;
  }

  /**
   * Parses a JSON object.
   *
   * @return the object, or {@code null} when the bytes are not one JSON object
   */
  static @Nullable Map<String, Object> parseObject(byte[] json, int off, int len) {
    if (STREAMING) {
      return JacksonStreamingJson.parseObject(json, off, len);
    }
    try {
      return Fallback.PARSER.parseMap(new String(json, off, len, StandardCharsets.UTF_8));
    } catch (RuntimeException e) { // JsonParseException, or a non-object body
      return null;
    }
  }

  /**
   * Reads the model tokens an OpenAI-shaped JSON object reports ({@link ModelTokens#usage(Map)}).
   *
   * @return the usage, or {@code null} when it reports none or the bytes are not one JSON object
   */
  static @Nullable Long usage(byte[] json, int off, int len) {
    if (STREAMING) {
      return JacksonStreamingJson.usage(json, off, len);
    }
    Map<String, Object> map = parseObject(json, off, len);
    return map == null ? null : ModelTokens.usage(map);
  }

  /** The parser without Jackson, created on first use. */
  static final class Fallback {

    /** Thread-safe, and created in the class initialiser, which publishes it to every thread. */
    static final JsonParser PARSER = JsonParserFactory.getJsonParser();

    static {
      // A parser may create its mapper lazily; doing it here publishes it safely to every thread.
      PARSER.parseMap("{}");
    }

    private Fallback() {}
  }
}
