package io.github.llmratelimiter.redis;

import org.jspecify.annotations.Nullable;

/**
 * The layout of the store's Redis keys: {@code <prefix>:{<root key>}:<budget>:<key>:w} holds a
 * level's sliding-window log, {@code ...:b} its token bucket, {@code ...:m} and {@code ...:a} its
 * model-token window; {@code <prefix>:{<root key>}:seq} numbers the root's reservations.
 *
 * <p>The root key (the key of a call's first level) is the hash tag, so every key one decision
 * touches lies in one Redis Cluster slot; a lower level's state is therefore kept per root key.
 * Each part is percent-encoded for {@code % : { } * ? [ ] \}, so parts never run into each other,
 * the hash tag is exactly the encoded root key, and the parts are safe inside {@code SCAN MATCH}
 * patterns.
 */
final class RedisKeys {

  private static final String SPECIAL = "%:{}*?[]\\";
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private final String prefix;

  RedisKeys(String prefix) {
    if (prefix == null || prefix.isBlank()) {
      throw new IllegalArgumentException(
          "keyPrefix must not be null or blank, but was " + (prefix == null ? "null" : "'" + prefix + "'"));
    }
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      if (c != ':' && SPECIAL.indexOf(c) >= 0 || Character.isWhitespace(c)) {
        throw new IllegalArgumentException(
            "keyPrefix must not contain whitespace or any of %{}*?[]\\, but was '" + prefix + "'");
      }
    }
    this.prefix = prefix;
  }

  /** The key of the level's sliding-window log (a sorted set). */
  String window(String root, String budget, String key) {
    return base(root, budget, key) + ":w";
  }

  /** The key of the level's token bucket (a hash). */
  String bucket(String root, String budget, String key) {
    return base(root, budget, key) + ":b";
  }

  /** The key of the level's model-token window (a sorted set of reservation ids). */
  String modelTokens(String root, String budget, String key) {
    return base(root, budget, key) + ":m";
  }

  /** The key of the level's model-token amounts (a hash). */
  String amounts(String root, String budget, String key) {
    return base(root, budget, key) + ":a";
  }

  /** The counter that numbers the reservations of one root key. */
  String sequence(String root) {
    return prefix + ":{" + encode(root) + "}:seq";
  }

  private String base(String root, String budget, String key) {
    return prefix + ":{" + encode(root) + "}:" + encode(budget) + ":" + encode(key);
  }

  /** A {@code SCAN MATCH} pattern for both keys of {@code (budget, key)} under every root key. */
  String pattern(String budget, String key) {
    return prefix + ":{*}:" + encode(budget) + ":" + encode(key) + ":?";
  }

  /** A {@code SCAN MATCH} pattern for every key of {@code budget}. */
  String pattern(String budget) {
    return prefix + ":{*}:" + encode(budget) + ":*";
  }

  /**
   * Splits a key of this layout into its root key and limiter key.
   *
   * @return {@code {root, key}}, or {@code null} if the key does not follow the layout
   */
  String @Nullable [] parse(String redisKey) {
    int open = prefix.length() + 1;
    int close = redisKey.indexOf('}', open);
    if (!redisKey.startsWith(prefix + ":{") || close < 0) {
      return null;
    }
    String[] rest = redisKey.substring(close + 2).split(":", -1);
    if (rest.length != 3) {
      return null;
    }
    return new String[] {decode(redisKey.substring(open + 1, close)), decode(rest[1])};
  }

  static String encode(String s) {
    StringBuilder b = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (SPECIAL.indexOf(c) >= 0) {
        if (b == null) {
          b = new StringBuilder(s.length() + 8).append(s, 0, i);
        }
        b.append('%').append(HEX[c >> 4]).append(HEX[c & 0xF]);
      } else if (b != null) {
        b.append(c);
      }
    }
    return b == null ? s : b.toString();
  }

  static String decode(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' && i + 2 < s.length()) {
        b.append((char) Integer.parseInt(s.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }
}
