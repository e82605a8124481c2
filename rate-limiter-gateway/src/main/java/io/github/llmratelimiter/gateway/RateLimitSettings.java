package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Composition;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The settings policies are resolved from, free of any configuration framework: the plain form of
 * the {@code ratelimiter.*} properties that shape budgets. {@link RateLimitPolicies#from} validates
 * them and names the property of the first invalid value ({@link
 * InvalidRateLimitPropertyException}).
 *
 * <p>The top level ({@code topLevel}) describes the policy named {@value #DEFAULT_POLICY} (unless a
 * policy of that name is declared) and gives every named policy the limits and the scope it does not
 * set itself; its models apply to the {@value #DEFAULT_POLICY} policy only.
 *
 * @param composition how the window and the bucket (and the levels of a hierarchy) compose
 * @param defaultPolicy the policy applied where none is named
 * @param topLevel the top level: limits, scope and models; its {@code parent} must be null
 * @param policies the named policies by name, in configuration order
 */
public record RateLimitSettings(
    @Nullable Composition composition,
    @Nullable String defaultPolicy,
    PolicySettings topLevel,
    Map<String, PolicySettings> policies) {

  /** The name of the policy built from the top level. */
  public static final String DEFAULT_POLICY = "default";

  /**
   * Validates the settings and copies the policies, keeping their order.
   *
   * @throws IllegalArgumentException if {@code topLevel} or {@code policies} is null, a policy's
   *     settings are null, or the top level names a parent
   */
  public RateLimitSettings {
    if (topLevel == null || policies == null) {
      throw new IllegalArgumentException("topLevel and policies must not be null");
    }
    if (topLevel.parent() != null) {
      throw new IllegalArgumentException(
          "the top level has no parent, but topLevel named '" + topLevel.parent() + "'");
    }
    Map<String, PolicySettings> copy = new LinkedHashMap<>();
    policies.forEach((name, policy) -> {
      if (policy == null) {
        throw new IllegalArgumentException("the settings of policy '" + name + "' must not be null");
      }
      copy.put(name, policy);
    });
    policies = Collections.unmodifiableMap(copy);
  }

  /**
   * Returns the settings of the properties' defaults: 60 requests a minute per API key, no bucket,
   * no model-token limit (a one-minute window when one is set), sequential composition, no named
   * policy.
   *
   * @return the settings
   */
  public static RateLimitSettings defaults() {
    LimitSettings top = new LimitSettings(60L, Duration.ofMinutes(1), null, null, null,
        Duration.ofMinutes(1));
    return new RateLimitSettings(Composition.SEQUENTIAL, DEFAULT_POLICY,
        new PolicySettings(top, KeyScope.API_KEY, Map.of(), null), Map.of());
  }

  /**
   * Returns these settings with one more named policy (or a policy replaced).
   *
   * @param name the policy's name
   * @param policy its settings
   * @return the new settings
   */
  public RateLimitSettings withPolicy(String name, PolicySettings policy) {
    Map<String, PolicySettings> all = new LinkedHashMap<>(policies);
    all.put(name, policy);
    return new RateLimitSettings(composition, defaultPolicy, topLevel, all);
  }

  /**
   * Returns these settings with another top level.
   *
   * @param top the top level's limits, scope and models
   * @return the new settings
   */
  public RateLimitSettings withTopLevel(PolicySettings top) {
    return new RateLimitSettings(composition, defaultPolicy, top, policies);
  }

  /**
   * Returns these settings with another composition.
   *
   * @param mode the composition
   * @return the new settings
   */
  public RateLimitSettings withComposition(Composition mode) {
    return new RateLimitSettings(mode, defaultPolicy, topLevel, policies);
  }
}
