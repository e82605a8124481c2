package io.github.llmratelimiter.gateway;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** HMAC-SHA-256 computed with the JDK alone, to check the ids the library shows. */
public final class TestHmac {

  private TestHmac() {}

  /**
   * Returns the first 16 hex digits of HMAC-SHA-256(secret, key), both in UTF-8.
   *
   * @param secret the secret
   * @param key the message
   * @return the hex prefix
   */
  public static String hex16(String secret, String key) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
      return HexFormat.of().formatHex(mac.doFinal(key.getBytes(StandardCharsets.UTF_8))).substring(0, 16);
    } catch (java.security.GeneralSecurityException e) {
      throw new AssertionError(e);
    }
  }
}
