package io.github.llmratelimiter.gateway.internal;

/**
 * Renders API keys safely: wherever this module shows a key (responses, logs, the Actuator
 * endpoint) it shows a mask, or an id from {@link KeyIds}, never the key in clear.
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
}
