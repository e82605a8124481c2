package io.github.llmratelimiter.redis;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * The layout of the store's Redis keys (layout 2): {@code <prefix>:{<root>}:<budget>:<key>:s} holds
 * a level's sliding-window log and token bucket in one string, {@code ...:t} its model-token
 * window in one string, {@code ...:c} its slots for calls in flight; {@code <prefix>:{<root>}:seq}
 * numbers the root's reservations; {@code <prefix>:{<key>}:plan} holds a key's plan; {@code
 * <prefix>:instances} holds the live gateway instances sharing the prefix; {@code
 * <prefix>:{<root>}:<budget>:<key>:q:<quota>:<start>} holds a level's use of one quota ({@code
 * name/unit/period}) in the period that starts at {@code start} (epoch milliseconds): a hash of
 * {@code u} (used: settled amounts and the estimates of calls in flight), {@code p} (those
 * estimates in flight) and {@code f<percent>} per threshold reported. The keys of
 * layout 1 ({@code ...:w}, a sorted set, and {@code ...:b}) and the earlier model-token keys
 * ({@code ...:m}, a sorted set, and {@code ...:a}, a hash) are never read, nor found by the scans.
 * The monitoring structures the decisions keep ({@link Monitoring}) are {@code
 * <prefix>:{<bucket tag>}:<budget>:~<kind>:...} ({@link #monitor}).
 *
 * <p>An upstream's state, which every caller shares, has its own hash tag, {@code
 * upstream:<name>}: {@code <prefix>:{upstream:<name>}:s}, {@code ...:t} and {@code ...:c} hold its
 * window, model-token window and slots as a level's keys hold a level's, {@code ...:r} what the
 * provider last reported (a hash, see {@code report.lua}) and {@code ...:seq} numbers the
 * reservations that hold its model tokens or slots ({@link #upstream}). No root's tag is ever
 * {@code upstream:...}: a root part is hashed, or percent-encoded with its colons.
 *
 * <p>The root (the key of a call's first level) is the hash tag, so every key one decision touches
 * lies in one Redis Cluster slot; a lower level's state is therefore kept per root key.
 *
 * <p>The limiter keys (root and key) appear as <em>parts</em>: hashed by default, {@code #}
 * followed by the first 128 bits of their SHA-256 in base64url (22 characters), so API keys never
 * appear in clear in Redis; or, without hashing, percent-encoded for {@code % : { } * ? [ ] \}.
 * Either way parts never run into each other, the hash tag is exactly the root's part, and parts
 * are safe inside {@code SCAN MATCH} patterns. Budget names are configuration, not secrets: they
 * are always percent-encoded only.
 */
final class RedisKeys {

  private static final String SPECIAL = "%:{}*?[]\\";
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();
  /** The first character of a hashed part. */
  static final char HASH_MARK = '#';
  private static final int HASH_BYTES = 16;
  private static final int HASHED_LENGTH = 1 + 22;
  /** The suffixes of a level's keys: state, model-token window, slots. */
  private static final String[] SUFFIXES = {":s", ":t", ":c"};
  /** Matches the suffix of every key of a level in this layout, and of no other. */
  private static final String SUFFIX_PATTERN = ":[stc]";

  private final String prefix;
  private final boolean hashed;
  private final @Nullable ThreadLocal<Mac> hmac;

  RedisKeys(String prefix, boolean hashed) {
    this(prefix, hashed, null);
  }

  /**
   * @param secret when not null, hashed parts are HMAC-SHA-256 under it instead of SHA-256, so
   *     that a hash in Redis cannot be reversed by hashing guessed keys
   */
  RedisKeys(String prefix, boolean hashed, byte @Nullable [] secret) {
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
    this.hashed = hashed;
    if (secret == null) {
      this.hmac = null;
    } else {
      SecretKeySpec key = new SecretKeySpec(secret.clone(), "HmacSHA256");
      this.hmac = ThreadLocal.withInitial(() -> {
        try {
          Mac mac = Mac.getInstance("HmacSHA256");
          mac.init(key);
          return mac;
        } catch (GeneralSecurityException e) {
          throw new IllegalStateException("HmacSHA256 is not available", e);
        }
      });
    }
  }

  /** Whether limiter keys are hashed. */
  boolean hashed() {
    return hashed;
  }

  /** The part that stands for a limiter key (root or key) in Redis key names. */
  String part(String key) {
    if (!hashed) {
      return encode(key);
    }
    ThreadLocal<Mac> keyed = hmac;
    if (keyed == null) {
      return hash(key);
    }
    byte[] digest = keyed.get().doFinal(key.getBytes(StandardCharsets.UTF_8));
    return HASH_MARK + Base64.getUrlEncoder().withoutPadding()
        .encodeToString(Arrays.copyOf(digest, HASH_BYTES));
  }

  /** The limiter key a part shows in {@code top}: the hashed part itself, or the decoded key. */
  String shown(String part) {
    return hashed ? part : decode(part);
  }

  /** The key of the level's state (window log and bucket), from limiter keys in clear. */
  String state(String root, String budget, String key) {
    return level(part(root), budget, part(key))[0];
  }

  /**
   * The three keys of one level, from parts: its state (window log and bucket), model-token window
   * and slots.
   */
  String[] level(String rootPart, String budget, String keyPart) {
    String base = prefix + ":{" + rootPart + "}:" + encode(budget) + ":" + keyPart;
    return new String[] {
        base + SUFFIXES[0], base + SUFFIXES[1], base + SUFFIXES[2]};
  }

  /**
   * The counter of one quota of a level in the period that starts at {@code startMs}, from the
   * level's state key ({@link #level}): under the same hash tag.
   */
  static String quota(String stateKey, String stateId, long startMs) {
    return stateKey.substring(0, stateKey.length() - SUFFIXES[0].length()) + ":q:"
        + encode(stateId) + ":" + startMs;
  }

  /**
   * A {@code SCAN MATCH} pattern for the quota counters of {@code (budget, key)} under every root
   * key, of every quota and period.
   */
  String quotaPattern(String budget, String key) {
    return prefix + ":{*}:" + encode(budget) + ":" + part(key) + ":q:*";
  }

  /**
   * A {@code SCAN MATCH} pattern for the counters of one quota of {@code budget} in the period that
   * starts at {@code startMs}, of every key under every root key.
   */
  String quotaPattern(String budget, String stateId, long startMs) {
    return prefix + ":{*}:" + encode(budget) + ":*:q:" + encode(stateId) + ":" + startMs;
  }

  /**
   * Splits a quota counter's key of this layout into its root part and key part.
   *
   * @return {@code {root part, key part}}, or {@code null} if the key is not a quota counter
   */
  String @Nullable [] parseQuota(String redisKey) {
    int open = prefix.length() + 1;
    int close = redisKey.indexOf('}', open);
    if (!redisKey.startsWith(prefix + ":{") || close < 0) {
      return null;
    }
    String[] rest = redisKey.substring(close + 2).split(":", -1);
    if (rest.length != 5 || !rest[2].equals("q")) {
      return null;
    }
    String root = redisKey.substring(open + 1, close);
    if (hashed && !(isHash(root) && isHash(rest[1]))) {
      return null;
    }
    return new String[] {root, rest[1]};
  }

  /**
   * The marker of one batch written back after an outage under a root key (from its part), which
   * makes the batch apply once.
   */
  String writeBack(String rootPart, String batch) {
    return prefix + ":{" + rootPart + "}:wb:" + batch;
  }

  /**
   * The five keys of an upstream, under its own hash tag: its state (window log), model-token
   * window, slots, report and reservation counter.
   */
  String[] upstream(String name) {
    String base = prefix + ":{upstream:" + encode(name) + "}:";
    return new String[] {base + "s", base + "t", base + "c", base + "r", base + "seq"};
  }

  /**
   * The first key of an upstream's fair order of waiting calls, under the upstream's own hash tag:
   * the order's other keys are this key followed by a suffix (lib.lua's ORDER).
   */
  String order(String upstream) {
    return prefix + ":{upstream:" + encode(upstream) + "}:o";
  }

  /**
   * The name of a tenant in an upstream's order: always a hash (keyed when a secret is set), so
   * that tenants (API keys) never appear in clear, whether limiter keys are hashed or not.
   */
  String tenant(String tenant) {
    return hashed ? part(tenant) : hash(tenant);
  }

  /** The channel on which wake-ups of the upstreams' orders are published (upstream names). */
  String signalChannel() {
    return prefix + ":upstream-signal";
  }

  /**
   * The channel on which an upstream's order says calls wait, and until when at most: {@code
   * <encoded name> <ms>}.
   */
  String waitingChannel() {
    return prefix + ":upstream-waiting";
  }

  /** The counter that numbers the reservations of one root key, from its part. */
  String sequence(String rootPart) {
    return prefix + ":{" + rootPart + "}:seq";
  }

  /**
   * The plan assigned to a limiter key (in clear) at runtime: a string, in the key's own hash tag
   * (so assignments spread over a Cluster's masters).
   */
  String plan(String key) {
    String part = part(key);
    return prefix + ":{" + part + "}:plan";
  }

  /**
   * A monitoring key of {@code budget} in the bucket whose hash tag is {@code tag} ({@link
   * Monitoring}): <code>&lt;prefix&gt;:{&lt;tag&gt;}:&lt;budget&gt;:~&lt;rest&gt;</code>. Its four
   * or more parts after the tag set it apart from a level's keys and quota counters ({@link #parse},
   * {@link #parseQuota}); the tag puts it among the keys {@link #everyKeyPattern} finds.
   */
  String monitor(String tag, String budget, String rest) {
    return prefix + ":{" + tag + "}:" + encode(budget) + ":~" + rest;
  }

  /** The sorted set of the live instances that share this prefix (their heartbeats). */
  String instances() {
    return prefix + ":instances";
  }

  /** A {@code SCAN MATCH} pattern for the keys of {@code (budget, key)} under every root key. */
  String pattern(String budget, String key) {
    return prefix + ":{*}:" + encode(budget) + ":" + part(key) + SUFFIX_PATTERN;
  }

  /** A {@code SCAN MATCH} pattern for every key of the layout but the live-instance set. */
  String everyKeyPattern() {
    return prefix + ":{*";
  }

  /** A {@code SCAN MATCH} pattern for every key of {@code budget}. */
  String pattern(String budget) {
    return prefix + ":{*}:" + encode(budget) + ":*" + SUFFIX_PATTERN;
  }

  /**
   * Splits a key of this layout into its root part and key part.
   *
   * @return {@code {root part, key part}}, or {@code null} if the key does not follow the layout
   *     (a key of layout 1 does not; nor, when hashing, one with a part that is not hashed)
   */
  String @Nullable [] parse(String redisKey) {
    int open = prefix.length() + 1;
    int close = redisKey.indexOf('}', open);
    if (!redisKey.startsWith(prefix + ":{") || close < 0) {
      return null;
    }
    String[] rest = redisKey.substring(close + 2).split(":", -1);
    if (rest.length != 3 || !isSuffix(rest[2])) {
      return null;
    }
    String root = redisKey.substring(open + 1, close);
    if (hashed && !(isHash(root) && isHash(rest[1]))) {
      return null;
    }
    return new String[] {root, rest[1]};
  }

  private static boolean isSuffix(String s) {
    return s.length() == 1 && "stc".indexOf(s.charAt(0)) >= 0;
  }

  /**
   * The hashed form of a limiter key: {@code #} and the first 128 bits of its UTF-8 SHA-256 in
   * base64url without padding.
   */
  static String hash(String key) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
      return HASH_MARK + Base64.getUrlEncoder().withoutPadding()
          .encodeToString(Arrays.copyOf(digest, HASH_BYTES));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is not available", e);
    }
  }

  /** Whether {@code s} has the shape of a hashed part. */
  static boolean isHash(String s) {
    if (s.length() != HASHED_LENGTH || s.charAt(0) != HASH_MARK) {
      return false;
    }
    for (int i = 1; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
          || c == '_')) {
        return false;
      }
    }
    return true;
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
