package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The policies of the application: each a chain of levels, root first, with the budgets a call is
 * charged on, and the plans that give keys other limits over the same state. Built once, at start-up,
 * by {@link #builder(Composition)}; immutable and thread-safe.
 */
public final class RateLimitPolicies {

  /** The name of the default policy unless another is named. */
  public static final String DEFAULT_POLICY = "default";

  /** The name of the default plan unless another is named: the policies as built. */
  public static final String DEFAULT_PLAN = "default";

  private final Map<String, RateLimitPolicy> policies;
  private final String defaultPolicy;
  private final Composition composition;
  private final Set<String> plans;
  private final String defaultPlan;
  private final ModelPrices prices;

  private RateLimitPolicies(Map<String, RateLimitPolicy> policies, String defaultPolicy,
      Composition composition, Set<String> plans, String defaultPlan, ModelPrices prices) {
    this.prices = prices;
    this.policies = Collections.unmodifiableMap(policies);
    this.defaultPolicy = defaultPolicy;
    this.composition = composition;
    this.plans = Collections.unmodifiableSet(plans);
    this.defaultPlan = defaultPlan;
  }

  /**
   * Returns a builder of policies whose decisions compose as {@code composition} says.
   *
   * @param composition how the budgets of a call (and the levels of a chain) compose
   * @return the builder
   * @throws IllegalArgumentException if {@code composition} is null
   */
  public static Builder builder(Composition composition) {
    return new Builder(Builder.notNull("composition", composition));
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
   * Returns the plan of a key that has none assigned.
   *
   * @return the default plan's name
   */
  public String defaultPlan() {
    return defaultPlan;
  }

  /**
   * Returns the price table that gives a call its cost, for the quotas that count cost.
   *
   * @return the prices; {@link ModelPrices#none()} unless set
   */
  public ModelPrices prices() {
    return prices;
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

  /**
   * Builds {@link RateLimitPolicies}: policies with their budgets, scopes, model overrides and
   * parents, and plans that override the limits of some policies. Not thread-safe.
   */
  public static final class Builder {

    private final Composition composition;
    private final Map<String, RateLimitPolicy.Level> levels = new LinkedHashMap<>();
    private final Map<String, @Nullable String> parents = new LinkedHashMap<>();
    private final Map<String, Map<String, Override>> plans = new LinkedHashMap<>();
    private String defaultPolicy = DEFAULT_POLICY;
    private String defaultPlan = DEFAULT_PLAN;
    private final Set<String> shadow = new LinkedHashSet<>();
    private ModelPrices prices = ModelPrices.none();

    private Builder(Composition composition) {
      this.composition = composition;
    }

    /**
     * Adds a root policy without model overrides.
     *
     * @param name the policy's name: not blank, without '{', '}' or '/'
     * @param scope what its budget is counted per
     * @param budget the budget of its calls
     * @return this builder
     * @throws IllegalArgumentException as {@link #policy(String, KeyScope, Budget, Map, String)}
     */
    public Builder policy(String name, KeyScope scope, Budget budget) {
      return policy(name, scope, budget, Map.of(), null);
    }

    /**
     * Adds a policy: one level of budgets, below its parent's chain.
     *
     * @param name the policy's name: not blank, without '{', '}' or '/'
     * @param scope what its budgets are counted per
     * @param budget the budget of a call on a model without an override
     * @param models the budget of a call on each model with an override, by model name
     * @param parent the policy one level above, or {@code null} for a root policy
     * @return this builder
     * @throws IllegalArgumentException if an argument is null, a name is not valid, or a policy of
     *     that name was added
     */
    public Builder policy(String name, KeyScope scope, Budget budget, Map<String, Budget> models,
        @Nullable String parent) {
      checkName("policy name", name);
      notNull("scope", scope);
      notNull("budget", budget);
      notNull("models", models);
      checkModels(models);
      if (parent != null) {
        checkName("parent", parent);
      }
      if (levels.containsKey(name)) {
        throw new IllegalArgumentException("policy '" + name + "' was already added");
      }
      levels.put(name, new RateLimitPolicy.Level(name, scope, budget, models));
      parents.put(name, parent);
      return this;
    }

    /**
     * Sets whether a policy denies the calls its budgets deny; a policy is enforced unless set.
     * A policy in shadow mode ({@code false}) decides and charges every call like an enforced one,
     * but admits the calls its levels deny (every level of its chain, its parents' included): such
     * an outcome says it would have been denied ({@link RateLimitOutcome#wouldHaveDenied()}). Its
     * quotas are best made shadow quotas too ({@code QuotaLimit.enforced(false)}), so that the
     * store charges a call its quotas would deny.
     *
     * @param policy a policy added to this builder before {@link #build()}
     * @param enforce {@code false} for shadow mode
     * @return this builder
     * @throws IllegalArgumentException if {@code policy} is null
     */
    public Builder enforce(String policy, boolean enforce) {
      notNull("policy", policy);
      if (enforce) {
        shadow.remove(policy);
      } else {
        shadow.add(policy);
      }
      return this;
    }

    /**
     * Sets the price table that gives a call its cost for the quotas that count cost; none unless
     * set (every call costs 0).
     *
     * @param table the prices
     * @return this builder
     * @throws IllegalArgumentException if {@code table} is null
     */
    public Builder prices(ModelPrices table) {
      this.prices = notNull("prices", table);
      return this;
    }

    /**
     * Names the policy applied where none is named; {@value #DEFAULT_POLICY} unless set.
     *
     * @param name a policy's name
     * @return this builder
     * @throws IllegalArgumentException if {@code name} is null
     */
    public Builder defaultPolicy(String name) {
      this.defaultPolicy = notNull("defaultPolicy", name);
      return this;
    }

    /**
     * Declares a plan; a plan overrides nothing until {@link #plan(String, String, Budget, Map)}
     * gives it limits.
     *
     * @param name the plan's name: not blank, without '{', '}' or '/'
     * @return this builder
     * @throws IllegalArgumentException if the name is not valid
     */
    public Builder plan(String name) {
      checkName("plan name", name);
      plans.computeIfAbsent(name, p -> new LinkedHashMap<>());
      return this;
    }

    /**
     * Gives a plan other limits on one policy's own level: the keys with the plan are charged on
     * variants of the policy's budgets ({@link Budget#variant}), over the same state as every other
     * plan. A model the policy configures that {@code models} does not name keeps its budget as
     * configured.
     *
     * @param name the plan's name, declared by this call if it is new
     * @param policy a policy added to this builder before {@link #build()}
     * @param budget the limits of the policy's budget under the plan: the same components and
     *     windows as the policy's budget, other limits; its quotas are the plan's, whatever the
     *     policy's budget has (a quota of the same name, unit and period counts on the same state)
     * @param models the limits of the policy's model budgets under the plan, by model name; each
     *     one a model the policy configures
     * @return this builder
     * @throws IllegalArgumentException if an argument is null, or the plan overrides the policy
     *     already
     */
    public Builder plan(String name, String policy, Budget budget, Map<String, Budget> models) {
      plan(name);
      notNull("policy", policy);
      notNull("budget", budget);
      notNull("models", models);
      checkModels(models);
      Map<String, Override> overrides = plans.get(name);
      if (overrides.containsKey(policy)) {
        throw new IllegalArgumentException(
            "plan '" + name + "' overrides policy '" + policy + "' already");
      }
      overrides.put(policy, new Override(budget, Map.copyOf(models)));
      return this;
    }

    /**
     * Names the plan of a key that has none assigned: a declared plan, or {@value #DEFAULT_PLAN}
     * (the policies as built) when no plan of that name is declared.
     *
     * @param name the plan's name
     * @return this builder
     * @throws IllegalArgumentException if {@code name} is null
     */
    public Builder defaultPlan(String name) {
      this.defaultPlan = notNull("defaultPlan", name);
      return this;
    }

    /**
     * Builds the policies.
     *
     * @return the policies
     * @throws IllegalArgumentException if no policy was added, the default policy or a parent is
     *     not a policy, parents form a cycle, the default plan is not a plan, or a plan overrides a
     *     policy or model that does not exist or changes a budget's components or windows
     */
    public RateLimitPolicies build() {
      if (!levels.containsKey(defaultPolicy)) {
        throw new IllegalArgumentException("defaultPolicy must be one of the policies "
            + levels.keySet() + ", but was '" + defaultPolicy + "'");
      }
      Map<String, Map<String, RateLimitPolicy.Level>> planLevels = new LinkedHashMap<>();
      for (Map.Entry<String, Map<String, Override>> plan : plans.entrySet()) {
        planLevels.put(plan.getKey(), planLevels(plan.getKey(), plan.getValue()));
      }
      if (!planLevels.containsKey(defaultPlan)) {
        if (!DEFAULT_PLAN.equals(defaultPlan)) {
          throw new IllegalArgumentException("defaultPlan must be one of the plans "
              + planLevels.keySet() + " or '" + DEFAULT_PLAN + "', but was '" + defaultPlan + "'");
        }
        planLevels.put(defaultPlan, levels);
      }
      Map<String, RateLimitPolicy> policies = new LinkedHashMap<>();
      for (String name : levels.keySet()) {
        Map<String, List<RateLimitPolicy.Level>> chains = new LinkedHashMap<>();
        planLevels.forEach((plan, own) -> chains.put(plan, chain(name, own)));
        policies.put(name, new RateLimitPolicy(name, chain(name, levels), chains, defaultPlan,
            !shadow.contains(name)));
      }
      for (String p : shadow) {
        if (!levels.containsKey(p)) {
          throw new IllegalArgumentException("the policy in shadow mode '" + p
              + "' must be one of the policies " + levels.keySet());
        }
      }
      return new RateLimitPolicies(policies, defaultPolicy, composition,
          new LinkedHashSet<>(planLevels.keySet()), defaultPlan, prices);
    }

    /** Every policy's own level under a plan: its overrides as variants, the rest as built. */
    private Map<String, RateLimitPolicy.Level> planLevels(String plan,
        Map<String, Override> overrides) {
      for (String policy : overrides.keySet()) {
        if (!levels.containsKey(policy)) {
          throw new IllegalArgumentException("plan '" + plan + "' overrides policy '" + policy
              + "', which is not one of the policies " + levels.keySet());
        }
      }
      Map<String, RateLimitPolicy.Level> result = new LinkedHashMap<>();
      for (RateLimitPolicy.Level own : levels.values()) {
        Override override = overrides.get(own.policy());
        if (override == null) {
          result.put(own.policy(), own);
          continue;
        }
        for (String model : override.models().keySet()) {
          if (!own.models().containsKey(model)) {
            throw new IllegalArgumentException("plan '" + plan + "' overrides model '" + model
                + "' of policy '" + own.policy() + "', which configures only "
                + own.models().keySet());
          }
        }
        Map<String, Budget> models = new LinkedHashMap<>();
        own.models().forEach((model, configured) -> {
          Budget planned = override.models().get(model);
          models.put(model, planned == null ? configured : variant(plan, configured, planned));
        });
        result.put(own.policy(), new RateLimitPolicy.Level(own.policy(), own.scope(),
            variant(plan, own.budget(), override.budget()), models));
      }
      return result;
    }

    /** The variant of {@code base} with the limits of {@code planned}, of the same shape. */
    private static Budget variant(String plan, Budget base, Budget planned) {
      boolean sameShape = (base.bucket() == null) == (planned.bucket() == null)
          && (base.modelTokens() == null) == (planned.modelTokens() == null)
          && (base.concurrency() == null) == (planned.concurrency() == null)
          && (base.window() == null) == (planned.window() == null)
          && (base.window() == null || base.window().window().equals(planned.window().window()))
          && (base.modelTokens() == null
              || base.modelTokens().window().equals(planned.modelTokens().window()));
      if (!sameShape) {
        throw new IllegalArgumentException("plan '" + plan + "' gives budget '" + base.name()
            + "' (" + base + ") the limits " + planned + ": a plan changes only limits, it adds no"
            + " component a budget lacks and keeps its windows");
      }
      return base.variant(planned.window(), planned.bucket(), planned.modelTokens(),
          planned.concurrency(), planned.quotas());
    }

    /** Levels root first: the parent's chain, then the policy's own level, from {@code own}. */
    private List<RateLimitPolicy.Level> chain(String name, Map<String, RateLimitPolicy.Level> own) {
      List<RateLimitPolicy.Level> chain = new ArrayList<>();
      Set<String> seen = new LinkedHashSet<>();
      for (String current = name; current != null; current = parents.get(current)) {
        if (!seen.add(current)) {
          throw new IllegalArgumentException("the parents of policy '" + name
              + "' lead back to it: " + seen);
        }
        if (!levels.containsKey(current)) {
          throw new IllegalArgumentException("the parent of policy '" + parent(current)
              + "' must be one of the policies " + levels.keySet() + ", but was '" + current + "'");
        }
        chain.add(0, own.get(current));
      }
      return chain;
    }

    private static <T> T notNull(String name, @Nullable T value) {
      if (value == null) {
        throw new IllegalArgumentException(name + " must not be null");
      }
      return value;
    }

    /** A plan's limits on one policy's own level. */
    private record Override(Budget budget, Map<String, Budget> models) {}

    /** The policy whose parent is {@code policy}, for a message. */
    private String parent(String policy) {
      for (Map.Entry<String, @Nullable String> e : parents.entrySet()) {
        if (policy.equals(e.getValue())) {
          return e.getKey();
        }
      }
      return policy;
    }

    private static void checkModels(Map<String, Budget> models) {
      models.forEach((model, b) -> {
        checkName("model name", model);
        notNull("the budget of model '" + model + "'", b);
      });
    }

    private static void checkName(String what, String name) {
      if (name == null || name.isBlank() || name.indexOf('{') >= 0 || name.indexOf('}') >= 0
          || name.indexOf('/') >= 0) {
        throw new IllegalArgumentException("a " + what + " must not be blank nor hold '{', '}' or"
            + " '/', but was " + (name == null ? "null" : "'" + name + "'"));
      }
    }
  }
}
