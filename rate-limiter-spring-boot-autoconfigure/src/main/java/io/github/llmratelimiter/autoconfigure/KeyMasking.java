package io.github.llmratelimiter.autoconfigure;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Renders API keys safely: wherever this module shows a key (responses, logs, the Actuator
 * endpoint) it shows a mask or a hash, never the key in clear.
 */
public final class KeyMasking {

  private static final int SHOWN = 4;
  private static final int MIN_LENGTH_TO_SHOW = 12;

  private KeyMasking() {}

  /**
   * Returns the key masked: {@code ****} followed by its last 4 characters, or only {@code ****}
   * when the key is shorter than 12 characters (so that most of a short key is never shown).
   *
   * @param key the key in clear
   * @return the masked key
   */
  public static String mask(String key) {
    return key.length() < MIN_LENGTH_TO_SHOW ? "****" : "****" + key.substring(key.length() - SHOWN);
  }

  /**
   * Returns a stable identifier of the key: the first 16 hex digits of its SHA-256 hash.
   *
   * @param key the key in clear
   * @return the hash prefix
   */
  public static String hash(String key) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is not available", e);
    }
  }
}
