package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.autoconfigure.RateLimiterProperties.Limits;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties.Policy;
import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
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
 * The policies of the application, resolved and validated from {@link RateLimiterProperties} once,
 * at start-up.
 */
public final class RateLimitPolicies {

  static final String PREFIX = "ratelimiter.";
  private static final long MAX_LIMIT = Integer.MAX_VALUE - 8;
  static final String LIMIT_RANGE = "an integer from 1 to " + MAX_LIMIT;
  static final String WINDOW_RANGE = "a positive duration, for example 1m, 30s or 500ms";
  static final String CAPACITY_RANGE = "a finite number > 0";
  static final String REFILL_RANGE = "a finite number >= 0 (0: the bucket never refills)";
  static final String TPM_RANGE = "an integer >= 1 (model tokens per window)";

  private final Map<String, RateLimitPolicy> policies;
  private final String defaultPolicy;
  private final Composition composition;

  private RateLimitPolicies(
      Map<String, RateLimitPolicy> policies, String defaultPolicy, Composition composition) {
    this.policies = Collections.unmodifiableMap(policies);
    this.defaultPolicy = defaultPolicy;
    this.composition = composition;
  }

  /**
   * Resolves and validates the policies of the properties.
   *
   * @param properties the bound properties
   * @return the policies
   * @throws InvalidRateLimitPropertyException naming the first invalid property
   */
  public static RateLimitPolicies from(RateLimiterProperties properties) {
    return new Resolver(properties).resolve();
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

  /** Resolves the policies, naming the first invalid property it meets. */
  private static final class Resolver {

    private final RateLimiterProperties props;
    private final Map<String, Policy> declared = new LinkedHashMap<>();
    private final Map<String, RateLimitPolicy.Level> ownLevels = new LinkedHashMap<>();

    Resolver(RateLimiterProperties props) {
      this.props = props;
    }

    RateLimitPolicies resolve() {
      validateTopLevel();
      if (!props.getPolicies().containsKey(RateLimiterProperties.DEFAULT_POLICY)) {
        declared.put(RateLimiterProperties.DEFAULT_POLICY, null);
      }
      declared.putAll(props.getPolicies());
      for (Map.Entry<String, Policy> e : declared.entrySet()) {
        ownLevels.put(e.getKey(), ownLevel(e.getKey(), e.getValue()));
      }
      Map<String, RateLimitPolicy> policies = new LinkedHashMap<>();
      for (String name : declared.keySet()) {
        policies.put(name, new RateLimitPolicy(name, chain(name)));
      }
      String defaultPolicy = props.getDefaultPolicy();
      if (defaultPolicy == null || !policies.containsKey(defaultPolicy)) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "default-policy", defaultPolicy, "one of the policies " + policies.keySet());
      }
      List<RateLimiterProperties.Route> routes = props.getWeb().getRoutes();
      for (int i = 0; i < routes.size(); i++) {
        String policy = routes.get(i).getPolicy();
        if (policy != null && !policies.containsKey(policy)) {
          throw new InvalidRateLimitPropertyException(
              PREFIX + "web.routes[" + i + "].policy", policy, "one of the policies " + policies.keySet());
        }
      }
      return new RateLimitPolicies(policies, defaultPolicy, props.getComposition());
    }

    private void validateTopLevel() {
      if (props.getComposition() == null) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "composition", null, "sequential or reserve-commit");
      }
      if (props.getAnonymousKey() == null || props.getAnonymousKey().isBlank()) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "anonymous-key", props.getAnonymousKey(), "a non-blank string");
      }
      if (props.getInMemory().getMaxKeysPerBudget() < 1) {
        throw new InvalidRateLimitPropertyException(PREFIX + "in-memory.max-keys-per-budget",
            props.getInMemory().getMaxKeysPerBudget(), "an integer >= 1");
      }
      RateLimiterProperties.Endpoint endpoint = props.getEndpoint();
      if (endpoint.getMaxTop() < 1) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "endpoint.max-top", endpoint.getMaxTop(), "an integer >= 1");
      }
      if (endpoint.getTop() < 1 || endpoint.getTop() > endpoint.getMaxTop()) {
        throw new InvalidRateLimitPropertyException(PREFIX + "endpoint.top", endpoint.getTop(),
            "an integer from 1 to endpoint.max-top (" + endpoint.getMaxTop() + ")");
      }
      checkLimit(PREFIX + "rpm.limit", props.getRpm().getLimit());
      checkWindow(PREFIX + "rpm.window", props.getRpm().getWindow());
      RateLimiterProperties.Tpm tpm = props.getTpm();
      checkWindow(PREFIX + "tpm.window", tpm.getWindow());
      if (tpm.getBytesPerToken() < 1) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "tpm.bytes-per-token", tpm.getBytesPerToken(), "an integer >= 1");
      }
      if (tpm.getTokensPerMessage() < 0) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "tpm.tokens-per-message", tpm.getTokensPerMessage(), "an integer >= 0");
      }
      if (tpm.getTokensPerRequest() < 0) {
        throw new InvalidRateLimitPropertyException(
            PREFIX + "tpm.tokens-per-request", tpm.getTokensPerRequest(), "an integer >= 0");
      }
      if (tpm.getDefaultCompletionTokens() < 0) {
        throw new InvalidRateLimitPropertyException(PREFIX + "tpm.default-completion-tokens",
            tpm.getDefaultCompletionTokens(), "an integer >= 0");
      }
    }

    /** The policy's own level; {@code policy} is null for the implicit default policy. */
    private RateLimitPolicy.Level ownLevel(String name, @Nullable Policy policy) {
      checkName(PREFIX + "policies", name, "policy name");
      boolean implicit = policy == null;
      String path = implicit ? PREFIX : PREFIX + "policies." + name + ".";
      Source source = implicit ? Source.TOP : new Source(policy, path, Source.TOP);
      KeyScope scope = implicit || policy.getScope() == null ? props.getScope() : policy.getScope();
      if (scope == null) {
        throw new InvalidRateLimitPropertyException(
            path + "scope", null, "api-key, api-key-and-model or global");
      }
      Budget budget = budget(name, source);
      Map<String, Limits> modelProps = implicit ? props.getModels() : policy.getModels();
      String modelsPath = implicit ? PREFIX + "models" : path + "models";
      Map<String, Budget> models = new LinkedHashMap<>();
      for (Map.Entry<String, Limits> m : modelProps.entrySet()) {
        checkName(modelsPath, m.getKey(), "model name");
        Source modelSource = new Source(m.getValue(), modelsPath + "." + m.getKey() + ".", source);
        models.put(m.getKey(), budget(name + "/" + m.getKey(), modelSource));
      }
      return new RateLimitPolicy.Level(name, scope, budget, models);
    }

    private static void checkName(String property, String name, String what) {
      if (name == null || name.isBlank() || name.indexOf('{') >= 0 || name.indexOf('}') >= 0
          || name.indexOf('/') >= 0) {
        throw new InvalidRateLimitPropertyException(
            property, name, "a " + what + " that is not blank and holds no '{', '}' or '/'");
      }
    }

    /** Levels root first: the parent's chain, then the policy's own level. */
    private List<RateLimitPolicy.Level> chain(String name) {
      List<RateLimitPolicy.Level> chain = new ArrayList<>();
      Set<String> seen = new LinkedHashSet<>();
      String current = name;
      while (current != null) {
        if (!seen.add(current)) {
          throw new InvalidRateLimitPropertyException(PREFIX + "policies." + name + ".parent",
              declared.get(name).getParent(), "a policy whose parents do not lead back to '" + name
                  + "' (the chain " + seen + " is a cycle)");
        }
        chain.add(0, ownLevels.get(current));
        Policy p = declared.get(current);
        String parent = p == null ? null : p.getParent();
        if (parent != null && !declared.containsKey(parent)) {
          throw new InvalidRateLimitPropertyException(PREFIX + "policies." + current + ".parent",
              parent, "one of the policies " + declared.keySet());
        }
        current = parent;
      }
      return chain;
    }

    private Budget budget(String name, Source source) {
      Long limit = source.find(l -> l.getRpm().getLimit(), props.getRpm().getLimit());
      checkLimit(source.path(l -> l.getRpm().getLimit(), "rpm.limit"), limit);
      Duration window = source.find(l -> l.getRpm().getWindow(), props.getRpm().getWindow());
      checkWindow(source.path(l -> l.getRpm().getWindow(), "rpm.window"), window);
      Double capacity = source.find(l -> l.getBurst().getCapacity(), props.getBurst().getCapacity());
      Double refill = source.find(l -> l.getBurst().getRefillPerSecond(), props.getBurst().getRefillPerSecond());
      String capacityPath = source.path(l -> l.getBurst().getCapacity(), "burst.capacity");
      String refillPath = source.path(l -> l.getBurst().getRefillPerSecond(), "burst.refill-per-second");
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
      return new Budget(name, new WindowLimit(limit, window), bucket, modelTokens(source));
    }

    /** The model-token (TPM) limit, or null when none is set at any level of the source. */
    private @Nullable ModelTokenLimit modelTokens(Source source) {
      Long limit = source.find(l -> l.getTpm().getLimit(), props.getTpm().getLimit());
      if (limit == null) {
        return null;
      }
      if (limit < 1) {
        throw new InvalidRateLimitPropertyException(
            source.path(l -> l.getTpm().getLimit(), "tpm.limit"), limit, TPM_RANGE);
      }
      Duration window = source.find(l -> l.getTpm().getWindow(), props.getTpm().getWindow());
      checkWindow(source.path(l -> l.getTpm().getWindow(), "tpm.window"), window);
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
   * Where a value comes from: the most specific properties first (a model's, then the policy's),
   * falling back to the top level.
   */
  private record Source(@Nullable Limits limits, String prefix, @Nullable Source parent) {

    static final Source TOP = new Source(null, PREFIX, null);

    /** The most specific value set, else {@code topValue}. */
    <T> @Nullable T find(Function<Limits, @Nullable T> getter, @Nullable T topValue) {
      for (Source s = this; s != null; s = s.parent) {
        T v = s.limits == null ? null : getter.apply(s.limits);
        if (v != null) {
          return v;
        }
      }
      return topValue;
    }

    /** The full name of the property {@link #find} takes its value from. */
    String path(Function<Limits, @Nullable Object> getter, String suffix) {
      for (Source s = this; s != null; s = s.parent) {
        if (s.limits != null && getter.apply(s.limits) != null) {
          return s.prefix + suffix;
        }
      }
      return PREFIX + suffix;
    }
  }
}
