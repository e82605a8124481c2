package io.github.llmratelimiter.gateway;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The settings of one plan ({@code ratelimiter.plans.<name>}): limit overrides applied on top of the
 * policies for the keys that have the plan. Each entry names a policy and overrides the limits of
 * that policy's own level and, under its {@code models}, of the models it configures; what a plan
 * does not set is the policy's as configured. A plan changes only numbers (a limit, a bucket's
 * capacity and refill, a lease timeout): it adds no component a policy lacks and keeps every window
 * length, since a key's plan decides on the same state as every other plan ({@link
 * io.github.llmratelimiter.core.Budget#variant}).
 *
 * @param policies the overrides by policy name, in configuration order; each one's {@code scope}
 *     and {@code parent} must be null (a plan does not move a policy)
 */
public record PlanSettings(Map<String, PolicySettings> policies) {

  /** A plan that overrides nothing: the policies as configured. */
  public static final PlanSettings NONE = new PlanSettings(Map.of());

  /**
   * Validates the settings and copies the overrides, keeping their order.
   *
   * @throws IllegalArgumentException if {@code policies} or one of its settings is null
   */
  public PlanSettings {
    if (policies == null) {
      throw new IllegalArgumentException("policies must not be null");
    }
    Map<String, PolicySettings> copy = new LinkedHashMap<>();
    policies.forEach((name, policy) -> {
      if (policy == null) {
        throw new IllegalArgumentException("the overrides of policy '" + name + "' must not be null");
      }
      copy.put(name, policy);
    });
    policies = Collections.unmodifiableMap(copy);
  }
}
