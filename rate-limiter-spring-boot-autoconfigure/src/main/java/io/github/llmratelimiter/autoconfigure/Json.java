package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.gateway.JsonReader;
import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.json.JsonParser;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.util.ClassUtils;

/**
 * How the limiter reads JSON bodies: straight from their bytes with Jackson's streaming parser when
 * Jackson's core is on the class path ({@link JacksonStreamingJson}), else with one shared Spring
 * Boot {@link JsonParser} ({@link JsonParserFactory#getJsonParser()} builds a new parser, and with
 * Jackson a new object mapper with cold caches, on every call).
 */
final class Json implements JsonReader {

  /** Whether Jackson's streaming parser is on the class path. */
  static final boolean STREAMING =
      ClassUtils.isPresent("tools.jackson.core.json.JsonFactory", Json.class.getClassLoader());

  /** The one reader, shared by every request. */
  static final Json READER = new Json();

  private Json() {}

  @Override
  public @Nullable Map<String, Object> parseObject(byte[] json, int off, int len) {
    if (STREAMING) {
      return JacksonStreamingJson.parseObject(json, off, len);
    }
    try {
      return Fallback.PARSER.parseMap(new String(json, off, len, StandardCharsets.UTF_8));
    } catch (RuntimeException e) { // JsonParseException, or a non-object body
      return null;
    }
  }

  /** Reads the members without building their objects and arrays when Jackson is there. */
  @Override
  public @Nullable Map<String, Object> parseMembers(byte[] json, int off, int len) {
    return STREAMING ? JacksonStreamingJson.parseMembers(json, off, len)
        : JsonReader.super.parseMembers(json, off, len);
  }

  /** Reads the usage without building the object when Jackson is there ({@link UsageScanner#usage(Map)}). */
  @Override
  public @Nullable Long usage(byte[] json, int off, int len) {
    if (STREAMING) {
      return JacksonStreamingJson.usage(json, off, len);
    }
    Map<String, Object> map = parseObject(json, off, len);
    return map == null ? null : UsageScanner.usage(map);
  }

  /**
   * Reads the itemized usage without building the object when Jackson is there ({@link
   * UsageScanner#modelUsage(Map)}).
   */
  @Override
  public @Nullable ModelUsage modelUsage(byte[] json, int off, int len) {
    if (STREAMING) {
      return JacksonStreamingJson.modelUsage(json, off, len);
    }
    Map<String, Object> map = parseObject(json, off, len);
    return map == null ? null : UsageScanner.modelUsage(map);
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
