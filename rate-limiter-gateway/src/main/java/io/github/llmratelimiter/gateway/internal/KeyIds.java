package io.github.llmratelimiter.gateway.internal;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Identifies API keys by a keyed hash: an id is the first 16 hex digits (64 bits) of the key's
 * HMAC-SHA-256 under a secret, so that an id shown (by the Actuator endpoint) reveals nothing of
 * the key to whoever lacks the secret, however short or guessable the key. Ids of one key agree
 * wherever the secret is the same. Thread-safe.
 */
public final class KeyIds {

  /** The shortest secret accepted, in bytes. */
  public static final int MIN_SECRET_BYTES = 16;

  private static final String ALGORITHM = "HmacSHA256";
  private static final int RANDOM_SECRET_BYTES = 32;
  private static final int ID_BYTES = 8;

  private final Mac mac;

  private KeyIds(byte[] secret) {
    try {
      mac = Mac.getInstance(ALGORITHM);
      mac.init(new SecretKeySpec(secret, ALGORITHM));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(ALGORITHM + " is not available", e);
    }
  }

  /**
   * Returns the ids under a secret.
   *
   * @param secret the secret, at least {@link #MIN_SECRET_BYTES} bytes in UTF-8
   * @return the ids
   * @throws IllegalArgumentException when the secret is shorter (the message gives its length,
   *     never the secret)
   */
  public static KeyIds of(String secret) {
    byte[] bytes = secret.getBytes(StandardCharsets.UTF_8);
    if (bytes.length < MIN_SECRET_BYTES) {
      throw new IllegalArgumentException("secret must be at least " + MIN_SECRET_BYTES
          + " bytes in UTF-8, but has " + bytes.length);
    }
    return new KeyIds(bytes);
  }

  /**
   * Returns the ids under a random secret (32 bytes from {@link SecureRandom}) that nothing else
   * knows: they agree only within this instance.
   *
   * @return the ids
   */
  public static KeyIds random() {
    byte[] secret = new byte[RANDOM_SECRET_BYTES];
    new SecureRandom().nextBytes(secret);
    return new KeyIds(secret);
  }

  /**
   * Returns the id of an API key: 16 lower-case hex digits.
   *
   * @param apiKey the API key in clear
   * @return the id
   */
  public String id(String apiKey) {
    byte[] digest;
    synchronized (mac) {
      digest = mac.doFinal(apiKey.getBytes(StandardCharsets.UTF_8));
    }
    return HexFormat.of().formatHex(digest, 0, ID_BYTES);
  }

  /**
   * Whether a string has the form of an id (16 hex digits), whichever secret made it.
   *
   * @param s the string
   * @return true when it could be an id
   */
  public static boolean isId(String s) {
    return s.length() == 2 * ID_BYTES && s.chars().allMatch(c -> Character.digit(c, 16) >= 0);
  }

  @Override
  public String toString() {
    return "KeyIds[HMAC-SHA-256, secret hidden]";
  }
}
