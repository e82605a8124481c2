package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;

/**
 * A key made of an API key and a model, so one API key gets a separate budget per model.
 *
 * <p>{@link #value()} encodes both parts unambiguously ({@code apiKey.length():apiKey:model}), so
 * no pair of parts collides with another pair.
 *
 * @param apiKey the caller's API key, not blank
 * @param model the model's name, not blank
 */
public record CompositeKey(String apiKey, String model) {

  /**
   * Validates both parts.
   *
   * @throws IllegalArgumentException if either part is null or blank
   */
  public CompositeKey {
    Args.notBlank("apiKey", apiKey);
    Args.notBlank("model", model);
  }

  /**
   * Returns the key as one string for a limiter.
   *
   * @return the encoded key
   */
  public String value() {
    return apiKey.length() + ":" + apiKey + ":" + model;
  }

  /**
   * Returns a description that does not reveal the API key.
   *
   * @return the model and a masked API key
   */
  @Override
  public String toString() {
    return "CompositeKey[apiKey=" + mask(apiKey) + ", model=" + model + "]";
  }

  private static String mask(String key) {
    return key.length() <= 4 ? "****" : "****" + key.substring(key.length() - 4);
  }
}
