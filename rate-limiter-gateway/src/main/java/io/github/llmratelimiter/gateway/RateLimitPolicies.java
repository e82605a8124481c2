package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The policies of the application, resolved and validated from {@link RateLimitSettings} once, at
 * start-up. Invalid settings are named by the property they come from ({@code ratelimiter.rpm.limit},
 * {@code ratelimiter.policies.chat.models.gpt-4o.tpm.window}, ...).
 */
public final class RateLimitPolicies {

  /** The prefix of every property an invalid setting is named by. */
  public static final String PREFIX = "ratelimiter.";
  private static final long MAX_LIMIT = Integer.MAX_VALUE - 8;
  static final String LIMIT_RANGE = "an integer from 1 to " + MAX_LIMIT;
  /** How a failure describes a valid window. */
  public static final String WINDOW_RANGE = "a positive duration, for example 1m, 30s or 500ms";
  static final String CAPACITY_RANGE = "a finite number > 0";
  static final String REFILL_RANGE = "a finite number >= 0 (0: the bucket never refills)";
  static final String TPM_RANGE = "an integer >= 1 (model tokens per window)";
  static final String LEASE_RANGE = "a positive duration of at most " + ConcurrencyLimit.MAX_LEASE
      + ", for example 10m";

  private final Map<String, RateLimitPolicy> policies;
  private final String defaultPolicy;
  private final Composition composition;
  private final Set<String> plans;
  private final String defaultPlan;

  private RateLimitPolicies(Map<String, RateLimitPolicy> policies, String defaultPolicy,
      Composition composition, Set<String> plans, String defaultPlan) {
    this.policies = Collections.unmodifiableMap(policies);
    this.defaultPolicy = defaultPolicy;
    this.composition = composition;
    this.plans = Collections.unmodifiableSet(plans);
    this.defaultPlan = defaultPlan;
  }

  /**
   * Resolves and validates the policies of the settings.
   *
   * @param settings the settings
   * @return the policies
   * @throws InvalidRateLimitPropertyException naming the property of the first invalid setting
   */
  public static RateLimitPolicies from(RateLimitSettings settings) {
    return new Resolver(settings).resolve();
  }

  /**
   * Returns a policy by name; a null or blank name means the default policy.
   *
   * @param name the policy's name
   * @return the policy
   * @throws IllegalArgumentException if no policy has that name
   */
  public RateLimitPolicy policy(@Nullable String name) {
    String n = name == null || name.isBlank() ? defaultPolicy : name;
    RateLimitPolicy p = policies.get(n);
    if (p == null) {
      throw new IllegalArgumentException(
          "policy must be one of " + policies.keySet() + ", but was '" + n + "'");
    }
    return p;
  }

  /**
   * Returns whether a policy of that name exists.
   *
   * @param name the name
   * @return whether it exists
   */
  public boolean contains(String name) {
    return policies.containsKey(name);
  }

  /**
   * Returns every policy, by name, in configuration order.
   *
   * @return the policies
   */
  public Map<String, RateLimitPolicy> all() {
    return policies;
  }

  /**
   * Returns the name of the default policy.
   *
   * @return the default policy's name
   */
  public String defaultPolicy() {
    return defaultPolicy;
  }

  /**
   * Returns the composition mode every decision uses.
   *
   * @return the composition
   */
  public Composition composition() {
    return composition;
  }

  /**
   * Returns the names of the plans, in configuration order: the declared ones, and the default plan
   * when it is not declared (the policies as configured).
   *
   * @return the plans' names
   */
  public Set<String> plans() {
    return plans;
  }

  /**
   * Returns whether a plan of that name exists.
   *
   * @param plan the name
   * @return whether it exists
   */
  public boolean containsPlan(@Nullable String plan) {
    return plan != null && plans.contains(plan);
  }

  /**
   * Returns the plan of a key that has none assigned ({@code ratelimiter.default-plan}).
   *
   * @return the default plan's name
   */
  public String defaultPlan() {
    return defaultPlan;
  }

  /**
   * Returns every budget of every policy, each once.
   *
   * @return the budgets
   */
  public Set<Budget> allBudgets() {
    Set<Budget> all = new LinkedHashSet<>();
    for (RateLimitPolicy p : policies.values()) {
      all.addAll(p.allBudgets());
    }
    return all;
  }

  /**
   * Returns the budgets of every policy under a plan, each once: the plan's variants of {@link
   * #allBudgets()}.
   *
   * @param plan the plan's name
   * @return the budgets
   * @throws IllegalArgumentException if no plan has that name
   */
  public Set<Budget> allBudgets(String plan) {
    Set<Budget> all = new LinkedHashSet<>();
    for (RateLimitPolicy p : policies.values()) {
      for (RateLimitPolicy.Level level : p.levels(plan)) {
        all.add(level.budget());
        all.addAll(level.models().values());
      }
    }
    return all;
  }

  /** Resolves the policies, naming the first invalid property it meets. */
  private static final class Resolver {

    private final RateLimitSettings settings;
    private final LimitSettings top;
    private final Map<String, @Nullable PolicySettings> declared = new LinkedHashMap<>();
    private final Map<String, RateLimitPolicy.Level> ownLevels = new LinkedHashMap<>();
    /** Per plan, every policy's own level under the plan. */
    private final Map<String, Map<String, RateLimitPolicy.Level>> planLevels = new LinkedHashMap<>();

    Resolver(RateLimitSettings settings) {
      this.settings = settings;
      this.top = settings.topLevel().limits();
    }

    RateLimitPolicies resolve() {
      validateTopLevel();
      if (!settings.policies().containsKey(RateLimitSettings.DEFAULT_POLICY)) {
        declared.put(RateLimitSettings.DEFAULT_POLICY, null);
      }
      declared.putAll(settings.policies());
      for (Map.Entry<String, @Nullable PolicySettings> e : declared.entrySet()) {
        ownLevels.put(e.getKey(), ownLevel(e.getKey(), e.getValue()));
      }
      String defaultPolicy = settings.defaultPolicy();
      if (defaultPolicy == null || !declared.containsKey(defaultPolicy)) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "default-policy", defaultPolicy, "one of the policies " + declared.keySet());
      }
      Map<String, PlanSettings> plans = new LinkedHashMap<>(settings.plans());
      String defaultPlan = settings.defaultPlan();
      if (defaultPlan == null || defaultPlan.isBlank()) {
        throw new InvalidRateLimitPropertyException(PREFIX + "default-plan", defaultPlan,
            "one of the plans " + plans.keySet() + ", or " + RateLimitSettings.DEFAULT_PLAN);
      }
      if (!plans.containsKey(defaultPlan)) {
        if (!RateLimitSettings.DEFAULT_PLAN.equals(defaultPlan)) {
          throw new InvalidRateLimitPropertyException(PREFIX + "default-plan", defaultPlan,
              "one of the plans " + plans.keySet() + ", or " + RateLimitSettings.DEFAULT_PLAN
                  + " (the policies as configured)");
        }
        plans.put(defaultPlan, PlanSettings.NONE);
      }
      for (Map.Entry<String, PlanSettings> plan : plans.entrySet()) {
        planLevels.put(plan.getKey(), planLevels(plan.getKey(), plan.getValue()));
      }
      Map<String, RateLimitPolicy> policies = new LinkedHashMap<>();
      for (String name : declared.keySet()) {
        Map<String, List<RateLimitPolicy.Level>> chains = new LinkedHashMap<>();
        for (String plan : plans.keySet()) {
          chains.put(plan, chain(name, planLevels.get(plan)));
        }
        policies.put(name, new RateLimitPolicy(name, chain(name, ownLevels), chains, defaultPlan));
      }
      Composition composition = settings.composition();
      return new RateLimitPolicies(
          policies, defaultPolicy, composition, new LinkedHashSet<>(plans.keySet()), defaultPlan);
    }

    /**
     * Every policy's own level under a plan: the plan's overrides on top of the policy as
     * configured, as variants of its budgets.
     */
    private Map<String, RateLimitPolicy.Level> planLevels(String plan, PlanSettings settings) {
      checkName(PREFIX + "plans", plan, "plan name");
      String planPath = PREFIX + "plans." + plan + ".policies";
      for (Map.Entry<String, PolicySettings> o : settings.policies().entrySet()) {
        if (!declared.containsKey(o.getKey())) {
          throw new InvalidRateLimitPropertyException(planPath + "." + o.getKey(), o.getKey(),
              "one of the policies " + declared.keySet());
        }
        PolicySettings override = o.getValue();
        if (override.scope() != null || override.parent() != null) {
          throw new InvalidRateLimitPropertyException(planPath + "." + o.getKey()
              + (override.scope() != null ? ".scope" : ".parent"), override.scope() != null
              ? override.scope() : override.parent(), "unset: a plan changes limits, not a policy's"
              + " scope or parent");
        }
        Map<String, Budget> configured = ownLevels.get(o.getKey()).models();
        for (String model : override.models().keySet()) {
          if (!configured.containsKey(model)) {
            throw new InvalidRateLimitPropertyException(planPath + "." + o.getKey() + ".models."
                + model, model, "one of the models policy '" + o.getKey() + "' configures "
                + configured.keySet() + " (a plan overrides limits the policy has)");
          }
        }
      }
      Map<String, RateLimitPolicy.Level> levels = new LinkedHashMap<>();
      for (Map.Entry<String, @Nullable PolicySettings> e : declared.entrySet()) {
        String name = e.getKey();
        PolicySettings override = settings.policies().get(name);
        RateLimitPolicy.Level own = ownLevels.get(name);
        if (override == null) {
          levels.put(name, own);
          continue;
        }
        String path = planPath + "." + name + ".";
        Source policySource = policySource(name, e.getValue());
        Source planSource = new Source(override.limits(), path, policySource);
        Budget budget = variant(own.budget(), budget(name, planSource), planSource);
        Map<String, LimitSettings> configuredModels =
            e.getValue() == null ? settings().topLevel().models() : e.getValue().models();
        String modelsPath = e.getValue() == null ? PREFIX + "models." : policySource.prefix + "models.";
        Map<String, Budget> models = new LinkedHashMap<>();
        for (Map.Entry<String, Budget> m : own.models().entrySet()) {
          Source configuredModel = new Source(
              configuredModels.get(m.getKey()), modelsPath + m.getKey() + ".", planSource);
          LimitSettings planModel = override.models().get(m.getKey());
          Source modelSource = planModel == null ? configuredModel
              : new Source(planModel, path + "models." + m.getKey() + ".", configuredModel);
          models.put(m.getKey(),
              variant(m.getValue(), budget(m.getValue().name(), modelSource), modelSource));
        }
        levels.put(name, new RateLimitPolicy.Level(name, own.scope(), budget, models));
      }
      return levels;
    }

    private RateLimitSettings settings() {
      return settings;
    }

    /**
     * The variant of {@code base} with the limits of {@code planned}, resolved from {@code source};
     * a component or window the plan's values would change names the property that sets it.
     */
    private static Budget variant(Budget base, Budget planned, Source source) {
      String difference = null;
      if ((base.bucket() == null) != (planned.bucket() == null)) {
        difference = source.path(LimitSettings::burstCapacity, "burst.capacity");
      } else if ((base.modelTokens() == null) != (planned.modelTokens() == null)) {
        difference = source.path(LimitSettings::tpmLimit, "tpm.limit");
      } else if ((base.concurrency() == null) != (planned.concurrency() == null)) {
        difference = source.path(LimitSettings::concurrencyLimit, "concurrency.limit");
      } else if (!base.window().window().equals(planned.window().window())) {
        difference = source.path(LimitSettings::rpmWindow, "rpm.window");
      } else if (base.modelTokens() != null
          && !base.modelTokens().window().equals(planned.modelTokens().window())) {
        difference = source.path(LimitSettings::tpmWindow, "tpm.window");
      }
      if (difference != null) {
        throw new InvalidRateLimitPropertyException(difference, valueOf(difference, source),
            "unset, or a value that changes only a limit of budget '" + base.name() + "' ("
                + base + "): a plan adds no bucket, model-token or concurrency limit a policy"
                + " lacks and keeps its windows");
      }
      return base.variant(planned.window(), planned.bucket(), planned.modelTokens(),
          planned.concurrency());
    }

    /** The value a source sets at a property it names. */
    private static @Nullable Object valueOf(String property, Source source) {
      for (Source s = source; s != null; s = s.parent) {
        if (property.startsWith(s.prefix)) {
          String suffix = property.substring(s.prefix.length());
          return switch (suffix) {
            case "burst.capacity" -> s.limits.burstCapacity();
            case "tpm.limit" -> s.limits.tpmLimit();
            case "concurrency.limit" -> s.limits.concurrencyLimit();
            case "rpm.window" -> s.limits.rpmWindow();
            case "tpm.window" -> s.limits.tpmWindow();
            default -> null;
          };
        }
      }
      return null;
    }

    private Source policySource(String name, @Nullable PolicySettings policy) {
      return policy == null ? topSource()
          : new Source(policy.limits(), PREFIX + "policies." + name + ".", topSource());
    }

    private void validateTopLevel() {
      if (settings.composition() == null) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "composition", null, "sequential or reserve-commit");
      }
      checkLimit(PREFIX + "rpm.limit", top.rpmLimit());
      checkWindow(PREFIX + "rpm.window", top.rpmWindow());
      checkWindow(PREFIX + "tpm.window", top.tpmWindow());
    }

    /** The policy's own level; {@code policy} is null for the implicit default policy. */
    private RateLimitPolicy.Level ownLevel(String name, @Nullable PolicySettings policy) {
      checkName(PREFIX + "policies", name, "policy name");
      boolean implicit = policy == null;
      String path = implicit ? PREFIX : PREFIX + "policies." + name + ".";
      Source source = policySource(name, policy);
      KeyScope scope = implicit || policy.scope() == null ? settings.topLevel().scope() : policy.scope();
      if (scope == null) {
        throw new InvalidRateLimitPropertyException(
            path + "scope", null, "api-key, api-key-and-model or global");
      }
      Budget budget = budget(name, source);
      Map<String, LimitSettings> modelSettings =
          implicit ? settings.topLevel().models() : policy.models();
      String modelsPath = implicit ? PREFIX + "models" : path + "models";
      Map<String, Budget> models = new LinkedHashMap<>();
      for (Map.Entry<String, LimitSettings> m : modelSettings.entrySet()) {
        checkName(modelsPath, m.getKey(), "model name");
        Source modelSource = new Source(m.getValue(), modelsPath + "." + m.getKey() + ".", source);
        models.put(m.getKey(), budget(name + "/" + m.getKey(), modelSource));
      }
      return new RateLimitPolicy.Level(name, scope, budget, models);
    }

    private Source topSource() {
      return new Source(top, PREFIX, null);
    }

    private static void checkName(String property, String name, String what) {
      if (name == null || name.isBlank() || name.indexOf('{') >= 0 || name.indexOf('}') >= 0
          || name.indexOf('/') >= 0) {
        throw new InvalidRateLimitPropertyException(
            property, name, "a " + what + " that is not blank and holds no '{', '}' or '/'");
      }
    }

    /** Levels root first: the parent's chain, then the policy's own level, from {@code own}. */
    private List<RateLimitPolicy.Level> chain(String name, Map<String, RateLimitPolicy.Level> own) {
      List<RateLimitPolicy.Level> chain = new ArrayList<>();
      Set<String> seen = new LinkedHashSet<>();
      String current = name;
      while (current != null) {
        if (!seen.add(current)) {
          throw new InvalidRateLimitPropertyException(PREFIX + "policies." + name + ".parent",
              parentOf(name), "a policy whose parents do not lead back to '" + name
                  + "' (the chain " + seen + " is a cycle)");
        }
        chain.add(0, own.get(current));
        String parent = parentOf(current);
        if (parent != null && !declared.containsKey(parent)) {
          throw new InvalidRateLimitPropertyException(PREFIX + "policies." + current + ".parent",
              parent, "one of the policies " + declared.keySet());
        }
        current = parent;
      }
      return chain;
    }

    private @Nullable String parentOf(String name) {
      PolicySettings p = declared.get(name);
      return p == null ? null : p.parent();
    }

    private Budget budget(String name, Source source) {
      Long limit = source.find(LimitSettings::rpmLimit);
      checkLimit(source.path(LimitSettings::rpmLimit, "rpm.limit"), limit);
      Duration window = source.find(LimitSettings::rpmWindow);
      checkWindow(source.path(LimitSettings::rpmWindow, "rpm.window"), window);
      Double capacity = source.find(LimitSettings::burstCapacity);
      Double refill = source.find(LimitSettings::burstRefillPerSecond);
      String capacityPath = source.path(LimitSettings::burstCapacity, "burst.capacity");
      String refillPath = source.path(LimitSettings::burstRefillPerSecond, "burst.refill-per-second");
      BucketLimit bucket = null;
      if (capacity != null || refill != null) {
        if (capacity == null || !(capacity > 0) || capacity.isInfinite()) {
          throw new InvalidRateLimitPropertyException(capacityPath, capacity,
              CAPACITY_RANGE + (capacity == null ? " (required with " + refillPath + ")" : ""));
        }
        if (refill == null || !(refill >= 0) || refill.isInfinite()) {
          throw new InvalidRateLimitPropertyException(refillPath, refill,
              REFILL_RANGE + (refill == null ? " (required with " + capacityPath + ")" : ""));
        }
        bucket = new BucketLimit(capacity, refill);
      }
      return new Budget(
          name, new WindowLimit(limit, window), bucket, modelTokens(source), concurrency(source));
    }

    /** The limit on calls in flight, or null when none is set at any level of the source. */
    private static @Nullable ConcurrencyLimit concurrency(Source source) {
      Long limit = source.find(LimitSettings::concurrencyLimit);
      Duration lease = source.find(LimitSettings::concurrencyLeaseTimeout);
      String leasePath = source.path(LimitSettings::concurrencyLeaseTimeout, "concurrency.lease-timeout");
      if (lease != null && (lease.isZero() || lease.isNegative()
          || lease.compareTo(ConcurrencyLimit.MAX_LEASE) > 0)) {
        throw new InvalidRateLimitPropertyException(leasePath, lease, LEASE_RANGE);
      }
      if (limit == null) {
        return null;
      }
      checkLimit(source.path(LimitSettings::concurrencyLimit, "concurrency.limit"), limit);
      return new ConcurrencyLimit(limit, lease == null ? ConcurrencyLimit.DEFAULT_LEASE_TIMEOUT : lease);
    }

    /** The model-token (TPM) limit, or null when none is set at any level of the source. */
    private @Nullable ModelTokenLimit modelTokens(Source source) {
      Long limit = source.find(LimitSettings::tpmLimit);
      if (limit == null) {
        return null;
      }
      if (limit < 1) {
        throw new InvalidRateLimitPropertyException(
            source.path(LimitSettings::tpmLimit, "tpm.limit"), limit, TPM_RANGE);
      }
      Duration window = source.find(LimitSettings::tpmWindow);
      checkWindow(source.path(LimitSettings::tpmWindow, "tpm.window"), window);
      return new ModelTokenLimit(limit, window);
    }

    private static void checkLimit(String path, @Nullable Long limit) {
      if (limit == null || limit < 1 || limit > MAX_LIMIT) {
        throw new InvalidRateLimitPropertyException(path, limit, LIMIT_RANGE);
      }
    }

    private static void checkWindow(String path, @Nullable Duration window) {
      if (window == null || window.isZero() || window.isNegative()) {
        throw new InvalidRateLimitPropertyException(path, window, WINDOW_RANGE);
      }
    }
  }

  /**
   * Where a value comes from: the most specific settings first (a model's, then the policy's, then
   * the top level's).
   */
  private record Source(LimitSettings limits, String prefix, @Nullable Source parent) {

    /** The most specific value set, or {@code null} when no level sets it. */
    <T> @Nullable T find(Function<LimitSettings, @Nullable T> getter) {
      for (Source s = this; s != null; s = s.parent) {
        T v = getter.apply(s.limits);
        if (v != null) {
          return v;
        }
      }
      return null;
    }

    /** The full name of the property {@link #find} takes its value from. */
    String path(Function<LimitSettings, @Nullable Object> getter, String suffix) {
      for (Source s = this; s != null; s = s.parent) {
        if (getter.apply(s.limits) != null) {
          return s.prefix + suffix;
        }
      }
      return PREFIX + suffix;
    }
  }
}
