package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.json.JsonFactory;

/**
 * Reads JSON bodies with Jackson's streaming parser straight from their bytes: no string copy, no
 * object mapper, no type resolution. The request body becomes the same map Jackson's data binding
 * would build ({@link LinkedHashMap}, {@link ArrayList}, {@link String}, {@link Integer} / {@link
 * Long} / {@link java.math.BigInteger}, {@link Double}, {@link Boolean}, {@code null}; the last of
 * duplicate names wins; trailing content fails); a response's usage is read without building
 * anything. Loaded only when Jackson's core is on the class path.
 */
final class JacksonStreamingJson {

  private static final JsonFactory FACTORY = new JsonFactory();

  private JacksonStreamingJson() {}

  /**
   * Parses a JSON object.
   *
   * @return the object, or {@code null} when the bytes are not one JSON object
   */
  static @Nullable Map<String, Object> parseObject(byte[] json, int off, int len) {
    return parse(json, off, len, true);
  }

  /**
   * Parses a JSON object's members, each object or array value read through but not built: it
   * stands as an empty map or list.
   *
   * @return the members, or {@code null} when the bytes are not one JSON object
   */
  static @Nullable Map<String, Object> parseMembers(byte[] json, int off, int len) {
    return parse(json, off, len, false);
  }

  /** One JSON object, its nested values built or skipped; {@code null} when it is not one. */
  private static @Nullable Map<String, Object> parse(byte[] json, int off, int len, boolean nested) {
    try (JsonParser p = FACTORY.createParser(ObjectReadContext.empty(), json, off, len)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      Map<String, Object> map = nested ? readObject(p) : readMembers(p);
      return p.nextToken() == null ? map : null;
    } catch (RuntimeException e) { // JacksonException: not well-formed
      return null;
    }
  }

  /** The members of the object the parser is at the start of, nested values skipped. */
  private static Map<String, Object> readMembers(JsonParser p) {
    Map<String, Object> map = new LinkedHashMap<>();
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      JsonToken t = p.nextToken();
      if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
        p.skipChildren();
        map.put(name, t == JsonToken.START_OBJECT ? Map.of() : List.of());
      } else {
        map.put(name, readValue(p));
      }
    }
    return map;
  }

  /**
   * Reads the model tokens an OpenAI-shaped JSON object reports, as {@link
   * io.github.llmratelimiter.gateway.internal.UsageScanner#usage(Map)}
   * reads them from the parsed object.
   *
   * @return the usage, or {@code null} when the object carries none or the bytes are not one JSON
   *     object
   */
  static @Nullable Long usage(byte[] json, int off, int len) {
    ModelUsage u = modelUsage(json, off, len);
    return u == null ? null : u.totalTokens();
  }

  /**
   * Reads the usage an OpenAI-shaped JSON object reports, itemized when it can be, as {@link
   * io.github.llmratelimiter.gateway.internal.UsageScanner#modelUsage(Map)} reads it from the
   * parsed object.
   *
   * @return the usage, or {@code null} when the object carries none or the bytes are not one JSON
   *     object
   */
  static @Nullable ModelUsage modelUsage(byte[] json, int off, int len) {
    try (JsonParser p = FACTORY.createParser(ObjectReadContext.empty(), json, off, len)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      UsageFields usage = null;
      UsageFields responseUsage = null;
      boolean responseIsObject = false;
      for (String name = p.nextName(); name != null; name = p.nextName()) {
        JsonToken value = p.nextToken();
        if ("usage".equals(name)) {
          usage = value == JsonToken.START_OBJECT ? UsageFields.read(p) : skip(p);
        } else if ("response".equals(name)) {
          responseIsObject = value == JsonToken.START_OBJECT;
          responseUsage = responseIsObject ? responseUsage(p) : skip(p);
        } else {
          p.skipChildren();
        }
      }
      if (p.nextToken() != null) {
        return null;
      }
      UsageFields u = usage != null ? usage : responseIsObject ? responseUsage : null;
      return u == null ? null : u.usage();
    } catch (RuntimeException e) { // JacksonException: not well-formed
      return null;
    }
  }

  /** The {@code usage} object of a {@code response} object the parser is at the start of. */
  private static @Nullable UsageFields responseUsage(JsonParser p) {
    UsageFields usage = null;
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      JsonToken value = p.nextToken();
      if ("usage".equals(name)) {
        usage = value == JsonToken.START_OBJECT ? UsageFields.read(p) : skip(p);
      } else {
        p.skipChildren();
      }
    }
    return usage;
  }

  private static @Nullable UsageFields skip(JsonParser p) {
    p.skipChildren();
    return null;
  }

  private static Map<String, Object> readObject(JsonParser p) {
    Map<String, Object> map = new LinkedHashMap<>();
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      map.put(name, readValue(p));
    }
    return map;
  }

  private static @Nullable Object readValue(JsonParser p) {
    JsonToken t = p.currentToken();
    return switch (t) {
      case START_OBJECT -> readObject(p);
      case START_ARRAY -> {
        List<Object> list = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
          list.add(readValue(p));
        }
        yield list;
      }
      case VALUE_STRING -> p.getString();
      case VALUE_NUMBER_INT -> p.getNumberValue();
      case VALUE_NUMBER_FLOAT -> p.getDoubleValue();
      case VALUE_TRUE -> Boolean.TRUE;
      case VALUE_FALSE -> Boolean.FALSE;
      case VALUE_NULL -> null;
      default -> throw new IllegalStateException("unexpected JSON token " + t);
    };
  }

  /**
   * A number value as {@link Number#longValue()} of the number data binding would build, or -1
   * when the value is not a number.
   */
  private static long longValue(JsonParser p, JsonToken t) {
    if (t == JsonToken.VALUE_NUMBER_INT) {
      return p.getNumberValue().longValue();
    }
    if (t == JsonToken.VALUE_NUMBER_FLOAT) {
      return (long) p.getDoubleValue();
    }
    p.skipChildren();
    return -1;
  }

  /** The counts of a {@code usage} object; -1 for a count that is absent, negative or no number. */
  private static final class UsageFields {

    long total = -1;
    long prompt = -1;
    long completion = -1;
    long input = -1;
    long output = -1;
    long promptCached = -1;
    long inputCached = -1;

    /** Reads the object the parser is at the start of; the last of duplicate names wins. */
    static UsageFields read(JsonParser p) {
      UsageFields u = new UsageFields();
      for (String name = p.nextName(); name != null; name = p.nextName()) {
        JsonToken t = p.nextToken();
        switch (name) {
          case "total_tokens" -> u.total = Math.max(-1, longValue(p, t));
          case "prompt_tokens" -> u.prompt = Math.max(-1, longValue(p, t));
          case "completion_tokens" -> u.completion = Math.max(-1, longValue(p, t));
          case "input_tokens" -> u.input = Math.max(-1, longValue(p, t));
          case "output_tokens" -> u.output = Math.max(-1, longValue(p, t));
          case "prompt_tokens_details" -> u.promptCached = cached(p, t);
          case "input_tokens_details" -> u.inputCached = cached(p, t);
          default -> p.skipChildren();
        }
      }
      return u;
    }

    /** The {@code cached_tokens} of a details object, -1 when absent. */
    static long cached(JsonParser p, JsonToken t) {
      if (t != JsonToken.START_OBJECT) {
        p.skipChildren();
        return -1;
      }
      long cached = -1;
      for (String name = p.nextName(); name != null; name = p.nextName()) {
        JsonToken v = p.nextToken();
        if ("cached_tokens".equals(name)) {
          cached = Math.max(-1, longValue(p, v));
        } else {
          p.skipChildren();
        }
      }
      return cached;
    }

    @Nullable ModelUsage usage() {
      return prompt >= 0 && completion >= 0
          ? UsageScanner.of(total, prompt, completion, promptCached)
          : UsageScanner.of(total, input, output, inputCached);
    }
  }
}
