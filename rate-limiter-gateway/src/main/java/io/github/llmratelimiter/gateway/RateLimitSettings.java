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
 * @param defaultPlan the plan of a key that has none assigned; a plan of this name that is not
 *     declared is the policies as configured
 * @param plans the plans by name, in configuration order ({@code ratelimiter.plans})
 */
public record RateLimitSettings(
    @Nullable Composition composition,
    @Nullable String defaultPolicy,
    PolicySettings topLevel,
    Map<String, PolicySettings> policies,
    @Nullable String defaultPlan,
    Map<String, PlanSettings> plans) {

  /** The name of the policy built from the top level. */
  public static final String DEFAULT_POLICY = "default";

  /** The name of the default plan unless configured: the policies as configured. */
  public static final String DEFAULT_PLAN = "default";

  /**
   * Validates the settings and copies the policies, keeping their order.
   *
   * @throws IllegalArgumentException if {@code topLevel}, {@code policies} or {@code plans} is
   *     null, a policy's or a plan's settings are null, or the top level names a parent
   */
  public RateLimitSettings {
    if (topLevel == null || policies == null || plans == null) {
      throw new IllegalArgumentException("topLevel, policies and plans must not be null");
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
    Map<String, PlanSettings> planCopy = new LinkedHashMap<>();
    plans.forEach((name, plan) -> {
      if (plan == null) {
        throw new IllegalArgumentException("the settings of plan '" + name + "' must not be null");
      }
      planCopy.put(name, plan);
    });
    plans = Collections.unmodifiableMap(planCopy);
  }

  /**
   * Returns settings without plans: every key has the policies as configured.
   *
   * @param composition how the window and the bucket (and the levels of a hierarchy) compose
   * @param defaultPolicy the policy applied where none is named
   * @param topLevel the top level: limits, scope and models; its {@code parent} must be null
   * @param policies the named policies by name, in configuration order
   * @throws IllegalArgumentException as the canonical constructor
   */
  public RateLimitSettings(@Nullable Composition composition, @Nullable String defaultPolicy,
      PolicySettings topLevel, Map<String, PolicySettings> policies) {
    this(composition, defaultPolicy, topLevel, policies, DEFAULT_PLAN, Map.of());
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
    return new RateLimitSettings(composition, defaultPolicy, topLevel, all, defaultPlan, plans);
  }

  /**
   * Returns these settings with another top level.
   *
   * @param top the top level's limits, scope and models
   * @return the new settings
   */
  public RateLimitSettings withTopLevel(PolicySettings top) {
    return new RateLimitSettings(composition, defaultPolicy, top, policies, defaultPlan, plans);
  }

  /**
   * Returns these settings with another composition.
   *
   * @param mode the composition
   * @return the new settings
   */
  public RateLimitSettings withComposition(Composition mode) {
    return new RateLimitSettings(mode, defaultPolicy, topLevel, policies, defaultPlan, plans);
  }

  /**
   * Returns these settings with other plans.
   *
   * @param plan the default plan's name
   * @param allPlans the plans by name
   * @return the new settings
   */
  public RateLimitSettings withPlans(@Nullable String plan, Map<String, PlanSettings> allPlans) {
    return new RateLimitSettings(composition, defaultPolicy, topLevel, policies, plan, allPlans);
  }
}
