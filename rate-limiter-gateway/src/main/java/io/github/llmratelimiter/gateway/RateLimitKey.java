package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.gateway.internal.KeyMasking;
import org.jspecify.annotations.Nullable;

/**
 * Who is calling and which model the call names: what a request is limited by.
 *
 * @param apiKey the caller's API key (or the shared anonymous key), not blank
 * @param model the model the call names, or {@code null} when it names none
 */
public record RateLimitKey(String apiKey, @Nullable String model) {

  /**
   * Validates the key.
   *
   * @throws IllegalArgumentException if the API key is null or blank, or the model is blank
   */
  public RateLimitKey {
    if (apiKey == null || apiKey.isBlank()) {
      throw new IllegalArgumentException("apiKey must not be null or blank");
    }
    if (model != null && model.isBlank()) {
      throw new IllegalArgumentException("model must be null or not blank, but was '" + model + "'");
    }
  }

  /**
   * Returns a key for an API key and an optional model, treating a blank model as none.
   *
   * @param apiKey the API key
   * @param model the model, blank or null for none
   * @return the key
   */
  public static RateLimitKey of(String apiKey, @Nullable String model) {
    return new RateLimitKey(apiKey, model == null || model.isBlank() ? null : model);
  }

  /**
   * Returns a description with the API key masked.
   *
   * @return the masked API key and the model
   */
  @Override
  public String toString() {
    return "RateLimitKey[apiKey=" + KeyMasking.mask(apiKey) + ", model=" + model + "]";
  }
}
