package io.github.llmratelimiter.gateway.internal;

import org.jspecify.annotations.Nullable;

/**
 * What a request body says about the model: whether it names one (or may, when it cannot be read as
 * a JSON object: the handler then rejects it, and no other source may stand in) and which.
 *
 * @param named whether the body names a model or may name one
 * @param model the model it names, or {@code null} when it names none or cannot be read
 */
public record BodyModel(boolean named, @Nullable String model) {

  /** A body that names no model (absent, empty, {@code null}, or without a {@code model}). */
  public static final BodyModel NONE = new BodyModel(false, null);

  /**
   * Validates the model.
   *
   * @throws IllegalArgumentException if a model is given while {@code named} is false
   */
  public BodyModel {
    if (!named && model != null) {
      throw new IllegalArgumentException("a body that names no model has none, but had '" + model + "'");
    }
  }
}
