package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.CompositeKey;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A named policy resolved from the properties: its levels, root first, each a budget (with per-model
 * variants) and what it is counted per.
 *
 * <p>A policy without a parent has one level. A policy with a parent has the parent's levels above
 * its own; {@link #budgets(RateLimitKey)} and {@link #keys(RateLimitKey)} give the lists one store
 * call decides atomically.
 */
public final class RateLimitPolicy {

  /** The key of every call on a {@link KeyScope#GLOBAL} level. */
  static final String GLOBAL_KEY = "global";

  private final String name;
  private final List<Level> levels;
  private final String defaultPlan;
  /** Per plan: its levels and the budget lists of its calls. */
  private final Map<String, Resolved> plans;
  /** The default plan's. */
  private final Resolved defaults;
  /** False for a policy in shadow mode: its denies are reported, not enforced. */
  private final boolean enforce;
  /** Whether some level of some plan, on some model, has a quota. */
  private final boolean hasQuotas;
  /** Whether one of those quotas counts model tokens or cost: its calls need an estimate. */
  private final boolean quotasEstimate;
  /** Whether some level of some plan, on some model, limits model tokens. */
  private final boolean limitsModelTokens;

  RateLimitPolicy(String name, List<Level> levels) {
    this(name, levels, Map.of(RateLimitPolicies.DEFAULT_PLAN, levels), RateLimitPolicies.DEFAULT_PLAN,
        true);
  }

  RateLimitPolicy(String name, List<Level> levels, Map<String, List<Level>> planLevels,
      String defaultPlan, boolean enforce) {
    this.name = name;
    this.enforce = enforce;
    boolean quotas = false;
    boolean estimate = false;
    boolean modelTokens = false;
    for (List<Level> plan : planLevels.values()) {
      for (Level level : plan) {
        List<Budget> budgets = new ArrayList<>(level.models().values());
        budgets.add(level.budget());
        for (Budget b : budgets) {
          modelTokens |= b.modelTokens() != null;
          for (QuotaLimit q : b.quotas()) {
            quotas = true;
            estimate |= q.unit() != QuotaUnit.REQUESTS;
          }
        }
      }
    }
    this.hasQuotas = quotas;
    this.quotasEstimate = estimate;
    this.limitsModelTokens = modelTokens;
    this.levels = List.copyOf(levels);
    this.defaultPlan = defaultPlan;
    Map<String, Resolved> resolved = new HashMap<>();
    planLevels.forEach((plan, l) -> resolved.put(plan, new Resolved(List.copyOf(l))));
    this.plans = Map.copyOf(resolved);
    this.defaults = plans.get(defaultPlan);
    if (defaults == null) {
      throw new IllegalArgumentException(
          "the default plan '" + defaultPlan + "' must be one of " + plans.keySet());
    }
  }

  /** A plan's levels, with the budget list of a call on each model resolved once. */
  private static final class Resolved {

    final List<Level> levels;
    /** The budgets of a call whose model no level overrides. */
    final List<Budget> defaultBudgets;
    /** The budgets of a call on each model that some level overrides. */
    final Map<String, List<Budget>> modelBudgets;

    Resolved(List<Level> levels) {
      this.levels = levels;
      this.defaultBudgets = resolve(null);
      Map<String, List<Budget>> byModel = new HashMap<>();
      for (Level level : levels) {
        for (String model : level.models().keySet()) {
          byModel.computeIfAbsent(model, this::resolve);
        }
      }
      this.modelBudgets = Map.copyOf(byModel);
    }

    private List<Budget> resolve(@Nullable String model) {
      List<Budget> budgets = new ArrayList<>(levels.size());
      for (Level level : levels) {
        budgets.add(level.budgetFor(model));
      }
      return List.copyOf(budgets);
    }

    List<Budget> budgets(@Nullable String model) {
      if (model != null) {
        List<Budget> budgets = modelBudgets.get(model);
        if (budgets != null) {
          return budgets;
        }
      }
      return defaultBudgets;
    }
  }

  /**
   * Returns the policy's name.
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * Returns whether the policy denies the calls its budgets deny; {@code false} in shadow mode,
   * where a call its budgets deny is admitted and its outcome says it would have been denied
   * ({@link RateLimitOutcome#wouldHaveDenied()}).
   *
   * @return whether the policy is enforced
   */
  public boolean enforce() {
    return enforce;
  }

  /**
   * Returns whether a level of the policy, under some plan and on some model, has a quota: its
   * calls are then reserved with their estimated requests, model tokens and cost.
   *
   * @return whether the policy counts quotas
   */
  public boolean hasQuotas() {
    return hasQuotas;
  }

  /**
   * Returns whether a quota of the policy (under some plan, on some model) counts model tokens or
   * cost: its calls are then estimated before they are decided, as for a model-token limit.
   *
   * @return whether the policy's quotas need a call's estimate
   */
  public boolean quotasEstimate() {
    return quotasEstimate;
  }

  /**
   * Returns whether a level of the policy (under some plan, on some model) limits model tokens: its
   * calls are then estimated before they are decided.
   *
   * @return whether the policy limits model tokens
   */
  public boolean limitsModelTokens() {
    return limitsModelTokens;
  }

  /**
   * Returns the levels as configured, root first; the last is the policy's own. Their budgets are
   * the defaults of every plan's variants.
   *
   * @return the levels
   */
  public List<Level> levels() {
    return levels;
  }

  /**
   * Returns the levels under a plan, root first: the plan's variants of the configured budgets.
   *
   * @param plan the plan's name
   * @return the levels
   * @throws IllegalArgumentException if no plan has that name
   */
  public List<Level> levels(String plan) {
    return resolved(plan).levels;
  }

  /**
   * Returns the name of the plan of a key that has none assigned.
   *
   * @return the default plan's name
   */
  public String defaultPlan() {
    return defaultPlan;
  }

  /**
   * Returns the budget of each level for a call under the default plan, root first.
   *
   * @param key the call's key
   * @return one budget per level, unmodifiable
   */
  public List<Budget> budgets(RateLimitKey key) {
    return defaults.budgets(key.model());
  }

  /**
   * Returns the budget of each level for a call under a plan, root first. The lists are resolved
   * once, when the policy is built: a call gets the same unmodifiable list as every other call on
   * its model and plan.
   *
   * @param key the call's key
   * @param plan the plan's name
   * @return one budget per level, unmodifiable
   * @throws IllegalArgumentException if no plan has that name
   */
  public List<Budget> budgets(RateLimitKey key, String plan) {
    return resolved(plan).budgets(key.model());
  }

  private Resolved resolved(String plan) {
    Resolved r = plan.equals(defaultPlan) ? defaults : plans.get(plan);
    if (r == null) {
      throw new IllegalArgumentException(
          "plan must be one of " + plans.keySet() + ", but was '" + plan + "'");
    }
    return r;
  }

  /**
   * Returns the store key of each level for a call, root first.
   *
   * @param key the call's key
   * @return one store key per level
   */
  public List<String> keys(RateLimitKey key) {
    List<String> keys = new ArrayList<>(levels.size());
    for (Level level : levels) {
      keys.add(level.keyFor(key));
    }
    return keys;
  }

  /**
   * Returns every budget the policy can use: each level's and each of its models'.
   *
   * @return the budgets, root level first
   */
  public Set<Budget> allBudgets() {
    Set<Budget> all = new LinkedHashSet<>();
    for (Level level : levels) {
      all.add(level.budget());
      all.addAll(level.models().values());
    }
    return all;
  }

  /**
   * One level of a policy.
   *
   * @param policy the name of the policy that defines the level
   * @param scope what the level's budget is counted per
   * @param budget the budget for calls whose model has no override
   * @param models the budgets of the models that have overrides, by model name
   */
  public record Level(String policy, KeyScope scope, Budget budget, Map<String, Budget> models) {

    /**
     * Copies the model map.
     *
     * @throws IllegalArgumentException if an argument is null
     */
    public Level {
      if (policy == null || scope == null || budget == null || models == null) {
        throw new IllegalArgumentException("policy, scope, budget and models must not be null");
      }
      models = Map.copyOf(models);
    }

    /**
     * Returns the budget for a model: its override, or the level's budget.
     *
     * @param model the model, or {@code null}
     * @return the budget
     */
    public Budget budgetFor(@Nullable String model) {
      if (model != null) {
        Budget override = models.get(model);
        if (override != null) {
          return override;
        }
      }
      return budget;
    }

    /**
     * Returns the store key of a call on this level.
     *
     * @param key the call's key
     * @return the API key, the API key and model, or the global key, as the scope says
     */
    public String keyFor(RateLimitKey key) {
      return switch (scope) {
        case API_KEY -> key.apiKey();
        case API_KEY_AND_MODEL ->
            key.model() == null ? key.apiKey() : new CompositeKey(key.apiKey(), key.model()).value();
        case GLOBAL -> GLOBAL_KEY;
      };
    }
  }
}
