package io.github.llmratelimiter.gateway;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The settings of one policy ({@code ratelimiter.policies.<name>}), or of the top level, which
 * describes the policy named {@value RateLimitSettings#DEFAULT_POLICY}.
 *
 * @param limits the policy's own limits; what it does not set it inherits from the top level
 * @param scope what the policy's budgets are counted per, or {@code null} to inherit the top level's
 * @param models per-model overrides by model name, in configuration order
 * @param parent the policy one level above this one, or {@code null} for a root policy
 */
public record PolicySettings(
    LimitSettings limits,
    @Nullable KeyScope scope,
    Map<String, LimitSettings> models,
    @Nullable String parent) {

  /**
   * Validates the settings and copies the models, keeping their order.
   *
   * @throws IllegalArgumentException if {@code limits} or {@code models} is null, or a model's
   *     limits are null
   */
  public PolicySettings {
    if (limits == null || models == null) {
      throw new IllegalArgumentException("limits and models must not be null");
    }
    Map<String, LimitSettings> copy = new LinkedHashMap<>();
    models.forEach((model, modelLimits) -> {
      if (modelLimits == null) {
        throw new IllegalArgumentException("the limits of model '" + model + "' must not be null");
      }
      copy.put(model, modelLimits);
    });
    models = Collections.unmodifiableMap(copy);
  }

  /**
   * Returns a root policy with the given limits, no model overrides and the top level's scope.
   *
   * @param limits the limits
   * @return the settings
   */
  public static PolicySettings of(LimitSettings limits) {
    return new PolicySettings(limits, null, Map.of(), null);
  }
}
