package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Parses the JSON the limiter reads: a request body (its {@code model}, its model-token estimate and
 * checks) and a response's {@code usage}. The gateway has no JSON parser of its own; a front door
 * provides one (in Spring, Jackson's streaming parser or Spring Boot's {@code JsonParser}).
 */
@FunctionalInterface
public interface JsonReader {

  /**
   * Parses one JSON object: numbers as {@link Integer}, {@link Long} or {@link
   * java.math.BigInteger} when integral, else {@link Double}; objects as maps in document order, the
   * last of duplicate names winning; arrays as lists.
   *
   * @param json the bytes
   * @param off where the object starts
   * @param len how many bytes it spans
   * @return the object, or {@code null} when the bytes are not exactly one JSON object
   */
  @Nullable Map<String, Object> parseObject(byte[] json, int off, int len);

  /**
   * Parses one JSON object's members as {@link #parseObject} does, except that an object or array
   * value need not be built: it may stand as an empty map or list. The limiter reads a body's
   * members this way where it needs no nested value (its {@code model} and the fields it checks);
   * the default builds them.
   *
   * @param json the bytes
   * @param off where the object starts
   * @param len how many bytes it spans
   * @return the members, or {@code null} when the bytes are not exactly one JSON object
   */
  default @Nullable Map<String, Object> parseMembers(byte[] json, int off, int len) {
    return parseObject(json, off, len);
  }

  /**
   * Reads the model tokens an OpenAI-shaped JSON object reports ({@link UsageScanner#usage(Map)});
   * the default parses the object, a parser may read the counts without building it.
   *
   * @param json the bytes
   * @param off where the object starts
   * @param len how many bytes it spans
   * @return the usage, or {@code null} when it reports none or the bytes are not one JSON object
   */
  default @Nullable Long usage(byte[] json, int off, int len) {
    Map<String, Object> map = parseObject(json, off, len);
    return map == null ? null : UsageScanner.usage(map);
  }

  /**
   * Reads the usage an OpenAI-shaped JSON object reports, itemized when it can be ({@link
   * UsageScanner#modelUsage(Map)}); the default parses the object.
   *
   * @param json the bytes
   * @param off where the object starts
   * @param len how many bytes it spans
   * @return the usage, or {@code null} when it reports none or the bytes are not one JSON object
   */
  default @Nullable ModelUsage modelUsage(byte[] json, int off, int len) {
    Map<String, Object> map = parseObject(json, off, len);
    return map == null ? null : UsageScanner.modelUsage(map);
  }
}
