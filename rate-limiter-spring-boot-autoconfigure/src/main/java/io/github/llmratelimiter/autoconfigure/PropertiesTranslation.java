package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.BodyLimits;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.ModelPrices;
import io.github.llmratelimiter.gateway.ModelSource;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.github.llmratelimiter.gateway.UpstreamWaits;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.util.unit.DataSize;

/**
 * The one translation of the bound {@code ratelimiter.*} properties into the model the gateway
 * enforces: the policies and plans ({@link RateLimitPolicies}), the model-token estimator and the
 * body limits. It resolves what each level inherits (a model from its policy, a policy from the
 * top level, a plan from the policy as configured) and names the property of the first invalid
 * value ({@link InvalidRateLimitPropertyException}); the gateway's model it builds knows no
 * property. The auto-configurations check the few properties of the beans they build themselves
 * (the Redis store, the in-memory store's maintenance, the console, the routes) the same way.
 */
final class PropertiesTranslation {

  /** The prefix of every property an invalid value is named by. */
  static final String PREFIX = "ratelimiter.";
  private static final long MAX_LIMIT = Integer.MAX_VALUE - 8;
  private static final String LIMIT_RANGE = "an integer from 1 to " + MAX_LIMIT;
  /** How a failure describes a valid window. */
  static final String WINDOW_RANGE = "a positive duration, for example 1m, 30s or 500ms";
  private static final String CAPACITY_RANGE = "a finite number > 0";
  private static final String REFILL_RANGE = "a finite number >= 0 (0: the bucket never refills)";
  private static final String TPM_RANGE = "an integer >= 1 (model tokens per window)";
  private static final String MARGIN_RANGE = "a duration of at least 0 and less than a minute,"
      + " for example 1s";
  /** How much longer than a minute an upstream's call counts when its margin is unset. */
  static final Duration UPSTREAM_MARGIN = Duration.ofSeconds(1);
  private static final String LEASE_RANGE = "a positive duration of at most "
      + ConcurrencyLimit.MAX_LEASE + ", for example 10m";

  private final RateLimiterProperties properties;
  private final Values top;
  /** The declared policies, the implicit default policy (null) first when it is not declared. */
  private final Map<String, RateLimiterProperties.@Nullable Policy> declared = new LinkedHashMap<>();
  private final Map<String, RateLimitPolicy.Level> ownLevels = new LinkedHashMap<>();
  /** The price table of {@code ratelimiter.prices}. */
  private final ModelPrices prices;

  private PropertiesTranslation(RateLimiterProperties properties) {
    this.properties = properties;
    RateLimiterProperties.Tpm tpm = properties.getTpm();
    this.top = new Values(properties.getRpm().getLimit(), properties.getRpm().getWindow(),
        properties.getBurst().getCapacity(), properties.getBurst().getRefillPerSecond(),
        tpm.getLimit(), tpm.getWindow(), null, null, quotasOf(properties.getQuotas()));
    this.prices = prices(properties);
  }

  /** The name of the default price in {@code ratelimiter.prices}. */
  static final String DEFAULT_PRICE = "default";
  private static final String PRICE_RANGE =
      "an amount >= 0 per million tokens with at most 6 decimals, for example 2.50";

  /**
   * The price table of {@code ratelimiter.prices}: each model's, and {@code default} for the rest.
   *
   * @throws InvalidRateLimitPropertyException naming the first invalid price
   */
  static ModelPrices prices(RateLimiterProperties properties) {
    Map<String, RateLimiterProperties.Price> configured =
        properties.getPrices() == null ? Map.of() : properties.getPrices();
    Map<String, ModelPrices.Price> models = new LinkedHashMap<>();
    ModelPrices.Price fallback = null;
    for (Map.Entry<String, RateLimiterProperties.Price> e : configured.entrySet()) {
      String path = PREFIX + "prices." + e.getKey() + ".";
      RateLimiterProperties.Price p = e.getValue();
      if (p == null) {
        throw new InvalidRateLimitPropertyException(path + "input", null, PRICE_RANGE);
      }
      long input = micros(path + "input", p.getInput(), PRICE_RANGE);
      long output = micros(path + "output", p.getOutput(), PRICE_RANGE);
      long cached = p.getCachedInput() == null ? input
          : micros(path + "cached-input", p.getCachedInput(), PRICE_RANGE);
      ModelPrices.Price price = new ModelPrices.Price(input, output, cached);
      if (DEFAULT_PRICE.equals(e.getKey())) {
        fallback = price;
      } else {
        models.put(e.getKey(), price);
      }
    }
    return ModelPrices.of(models, fallback);
  }

  /** An amount of currency in micro-units, at least 0; a missing one fails. */
  private static long micros(String path, @Nullable BigDecimal amount, String range) {
    if (amount == null) {
      throw new InvalidRateLimitPropertyException(path, null, range);
    }
    try {
      return ModelPrices.Price.micros(path, amount);
    } catch (IllegalArgumentException e) {
      throw new InvalidRateLimitPropertyException(path, amount.toPlainString(), range);
    }
  }

  /**
   * Translates the policies and plans of the properties, and checks that every route names one of
   * the policies.
   *
   * @throws InvalidRateLimitPropertyException naming the first invalid property
   */
  static RateLimitPolicies policies(RateLimiterProperties properties, RateLimiterWebProperties web) {
    validate(properties);
    RateLimitPolicies policies = new PropertiesTranslation(properties).resolve();
    List<RateLimiterWebProperties.Route> routes = web.getRoutes();
    for (int i = 0; i < routes.size(); i++) {
      String policy = routes.get(i).getPolicy();
      if (policy != null && !policies.contains(policy)) {
        throw new InvalidRateLimitPropertyException(PREFIX + "web.routes[" + i + "].policy", policy,
            "one of the policies " + policies.all().keySet());
      }
    }
    return policies;
  }

  private RateLimitPolicies resolve() {
    validateTopLevel();
    if (!properties.getPolicies().containsKey(RateLimitPolicies.DEFAULT_POLICY)) {
      declared.put(RateLimitPolicies.DEFAULT_POLICY, null);
    }
    declared.putAll(properties.getPolicies());
    for (Map.Entry<String, RateLimiterProperties.@Nullable Policy> e : declared.entrySet()) {
      ownLevels.put(e.getKey(), ownLevel(e.getKey(), e.getValue()));
    }
    String defaultPolicy = properties.getDefaultPolicy();
    if (defaultPolicy == null || !declared.containsKey(defaultPolicy)) {
      throw new InvalidRateLimitPropertyException(
          PREFIX + "default-policy", defaultPolicy, "one of the policies " + declared.keySet());
    }
    Map<String, RateLimiterProperties.Plan> plans = properties.getPlans();
    String defaultPlan = properties.getDefaultPlan();
    if (defaultPlan == null || defaultPlan.isBlank()) {
      throw new InvalidRateLimitPropertyException(PREFIX + "default-plan", defaultPlan,
          "one of the plans " + plans.keySet() + ", or " + RateLimitPolicies.DEFAULT_PLAN);
    }
    if (!plans.containsKey(defaultPlan) && !RateLimitPolicies.DEFAULT_PLAN.equals(defaultPlan)) {
      throw new InvalidRateLimitPropertyException(PREFIX + "default-plan", defaultPlan,
          "one of the plans " + plans.keySet() + ", or " + RateLimitPolicies.DEFAULT_PLAN
              + " (the policies as configured)");
    }
    RateLimitPolicies.Builder builder = RateLimitPolicies.builder(properties.getComposition())
        .defaultPolicy(defaultPolicy).defaultPlan(defaultPlan).prices(prices);
    for (Map.Entry<String, RateLimiterProperties.@Nullable Plan> plan : plans.entrySet()) {
      planLevels(plan.getKey(), plan.getValue(), builder);
    }
    for (Map.Entry<String, RateLimitPolicy.Level> e : ownLevels.entrySet()) {
      checkChain(e.getKey());
      RateLimitPolicy.Level own = e.getValue();
      builder.policy(e.getKey(), own.scope(), own.budget(), own.models(), parentOf(e.getKey()));
      builder.enforce(e.getKey(), enforce(e.getKey()));
    }
    return builder.build();
  }

  /**
   * Gives the builder a plan's limits on every policy it overrides: the plan's values on top of the
   * policy as configured, and of each model the policy configures.
   */
  private void planLevels(String plan, RateLimiterProperties.@Nullable Plan settings,
      RateLimitPolicies.Builder builder) {
    checkName(PREFIX + "plans", plan, "plan name");
    builder.plan(plan);
    Map<String, RateLimiterProperties.PlanPolicy> overrides =
        settings == null ? Map.of() : settings.getPolicies();
    String planPath = PREFIX + "plans." + plan + ".policies";
    for (Map.Entry<String, RateLimiterProperties.PlanPolicy> o : overrides.entrySet()) {
      if (!declared.containsKey(o.getKey())) {
        throw new InvalidRateLimitPropertyException(planPath + "." + o.getKey(), o.getKey(),
            "one of the policies " + declared.keySet());
      }
      Map<String, Budget> configured = ownLevels.get(o.getKey()).models();
      for (String model : o.getValue().getModels().keySet()) {
        if (!configured.containsKey(model)) {
          throw new InvalidRateLimitPropertyException(planPath + "." + o.getKey() + ".models."
              + model, model, "one of the models policy '" + o.getKey() + "' configures "
              + configured.keySet() + " (a plan overrides limits the policy has)");
        }
      }
    }
    for (Map.Entry<String, RateLimiterProperties.@Nullable Policy> e : declared.entrySet()) {
      String name = e.getKey();
      RateLimiterProperties.PlanPolicy override = overrides.get(name);
      if (override == null) {
        continue;
      }
      RateLimitPolicy.Level own = ownLevels.get(name);
      String path = planPath + "." + name + ".";
      Source policySource = policySource(name, e.getValue());
      Source planSource = new Source(Values.of(override), path, policySource);
      boolean enforce = enforce(name);
      Budget budget = planned(own.budget(), budget(name, planSource, enforce), planSource);
      requirePrices(budget, null, planSource);
      Map<String, RateLimiterProperties.Limits> configuredModels =
          e.getValue() == null ? properties.getModels() : e.getValue().getModels();
      String modelsPath = e.getValue() == null ? PREFIX + "models." : policySource.prefix + "models.";
      Map<String, Budget> models = new LinkedHashMap<>();
      for (Map.Entry<String, Budget> m : own.models().entrySet()) {
        Source configuredModel = new Source(Values.of(configuredModels.get(m.getKey())),
            modelsPath + m.getKey() + ".", planSource);
        RateLimiterProperties.Limits planModel = override.getModels().get(m.getKey());
        Source modelSource = planModel == null ? configuredModel
            : new Source(Values.of(planModel), path + "models." + m.getKey() + ".", configuredModel);
        Budget modelBudget = planned(m.getValue(), budget(m.getValue().name(), modelSource, enforce),
            modelSource);
        requirePrices(modelBudget, m.getKey(), modelSource);
        models.put(m.getKey(), modelBudget);
      }
      builder.plan(plan, name, budget, models);
    }
  }

  /**
   * The limits a plan gives {@code base}, resolved from {@code source}: {@code planned}, once it is
   * checked to change only limits; a component or window it would change names the property that
   * sets it.
   */
  private static Budget planned(Budget base, Budget planned, Source source) {
    String difference = null;
    if ((base.bucket() == null) != (planned.bucket() == null)) {
      difference = source.path(Values::burstCapacity, "burst.capacity");
    } else if ((base.modelTokens() == null) != (planned.modelTokens() == null)) {
      difference = source.path(Values::tpmLimit, "tpm.limit");
    } else if ((base.concurrency() == null) != (planned.concurrency() == null)) {
      difference = source.path(Values::concurrencyLimit, "concurrency.limit");
    } else if (base.window() != null && planned.window() != null
        && !base.window().window().equals(planned.window().window())) {
      difference = source.path(Values::rpmWindow, "rpm.window");
    } else if (base.modelTokens() != null
        && !base.modelTokens().window().equals(planned.modelTokens().window())) {
      difference = source.path(Values::tpmWindow, "tpm.window");
    }
    if (difference != null) {
      throw new InvalidRateLimitPropertyException(difference, valueOf(difference, source),
          "unset, or a value that changes only a limit of budget '" + base.name() + "' ("
              + base + "): a plan adds no bucket, model-token or concurrency limit a policy"
              + " lacks and keeps its windows");
    }
    return planned;
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

  private Source policySource(String name, RateLimiterProperties.@Nullable Policy policy) {
    return policy == null ? topSource()
        : new Source(Values.of(policy), PREFIX + "policies." + name + ".", topSource());
  }

  private void validateTopLevel() {
    if (properties.getComposition() == null) {
      throw new InvalidRateLimitPropertyException(
          PREFIX + "composition", null, "sequential or reserve-commit");
    }
    checkLimit(PREFIX + "rpm.limit", top.rpmLimit());
    checkWindow(PREFIX + "rpm.window", top.rpmWindow());
    checkWindow(PREFIX + "tpm.window", top.tpmWindow());
  }

  /** The policy's own level; {@code policy} is null for the implicit default policy. */
  private RateLimitPolicy.Level ownLevel(String name, RateLimiterProperties.@Nullable Policy policy) {
    checkName(PREFIX + "policies", name, "policy name");
    boolean implicit = policy == null;
    String path = implicit ? PREFIX : PREFIX + "policies." + name + ".";
    Source source = policySource(name, policy);
    KeyScope scope =
        implicit || policy.getScope() == null ? properties.getScope() : policy.getScope();
    if (scope == null) {
      throw new InvalidRateLimitPropertyException(
          path + "scope", null, "api-key, api-key-and-model or global");
    }
    boolean enforce = enforce(name);
    Budget budget = budget(name, source, enforce);
    requirePrices(budget, null, source);
    Map<String, RateLimiterProperties.Limits> modelSettings =
        implicit ? properties.getModels() : policy.getModels();
    String modelsPath = implicit ? PREFIX + "models" : path + "models";
    Map<String, Budget> models = new LinkedHashMap<>();
    for (Map.Entry<String, RateLimiterProperties.Limits> m : modelSettings.entrySet()) {
      checkName(modelsPath, m.getKey(), "model name");
      Source modelSource = new Source(Values.of(m.getValue()), modelsPath + "." + m.getKey() + ".", source);
      Budget modelBudget = budget(name + "/" + m.getKey(), modelSource, enforce);
      requirePrices(modelBudget, m.getKey(), modelSource);
      models.put(m.getKey(), modelBudget);
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

  /** Checks that the parents of a policy are policies and lead to a root. */
  private void checkChain(String name) {
    Set<String> seen = new LinkedHashSet<>();
    for (String current = name; current != null; current = parentOf(current)) {
      if (!seen.add(current)) {
        throw new InvalidRateLimitPropertyException(PREFIX + "policies." + name + ".parent",
            parentOf(name), "a policy whose parents do not lead back to '" + name
                + "' (the chain " + seen + " is a cycle)");
      }
      String parent = parentOf(current);
      if (parent != null && !declared.containsKey(parent)) {
        throw new InvalidRateLimitPropertyException(PREFIX + "policies." + current + ".parent",
            parent, "one of the policies " + declared.keySet());
      }
    }
  }

  private @Nullable String parentOf(String name) {
    RateLimiterProperties.Policy p = declared.get(name);
    return p == null ? null : p.getParent();
  }

  /** Whether a policy is enforced: its own {@code enforce}, else the top level's. */
  private boolean enforce(String name) {
    RateLimiterProperties.Policy p = declared.get(name);
    return p == null || p.getEnforce() == null ? properties.isEnforce() : p.getEnforce();
  }

  /**
   * Checks that every model a budget with a cost quota serves has a price: {@code model}'s own or
   * the default, or for a policy's budget (which serves every model without an override) the
   * default.
   */
  private void requirePrices(Budget budget, @Nullable String model, Source source) {
    QuotaLimit cost = null;
    for (QuotaLimit q : budget.quotas()) {
      if (q.unit() == QuotaUnit.COST) {
        cost = q;
        break;
      }
    }
    if (cost == null || prices.price(model) != null) {
      return;
    }
    String quotaPath = quotaPath(source, cost.name(), RateLimiterProperties.Quota::getUnit, "unit");
    String property = PREFIX + "prices." + (model == null ? DEFAULT_PRICE : model);
    throw new InvalidRateLimitPropertyException(property, null, model == null
        ? "a price (input and output per million tokens) for every model: budget '"
            + budget.name() + "' has the cost quota " + quotaPath + " and serves calls on any model"
        : "a price (input and output per million tokens) of model '" + model + "', or "
            + PREFIX + "prices." + DEFAULT_PRICE + ": its budget '" + budget.name()
            + "' has the cost quota " + quotaPath);
  }

  private static final String UNIT_RANGE = "requests, tokens or cost";
  private static final String PERIOD_RANGE = "hour, day, week or month";
  private static final String QUOTA_LIMIT_RANGE =
      "a whole number from 1 to 2^53 (" + QuotaLimit.MAX_LIMIT + ")";
  private static final String COST_LIMIT_RANGE = "an amount > 0 with at most 6 decimals, for "
      + "example 50 or 0.25, of at most 2^53 micro-units (" + QuotaLimit.MAX_LIMIT / 1_000_000
      + " and a fraction)";
  private static final String THRESHOLD_RANGE =
      "ascending distinct percentages from 1 to 100 (at most 30), for example [50, 80, 100]";

  /**
   * The quotas of a level, root first: every quota a source of the chain names, each field from
   * the most specific source that sets it.
   */
  private List<QuotaLimit> quotas(Source source, boolean enforce) {
    List<Source> chain = new ArrayList<>();
    for (Source s = source; s != null; s = s.parent) {
      chain.add(0, s);
    }
    Set<String> names = new LinkedHashSet<>();
    for (Source s : chain) {
      names.addAll(s.limits.quotas().keySet());
    }
    List<QuotaLimit> quotas = new ArrayList<>(names.size());
    for (String name : names) {
      quotas.add(quota(source, name, enforce));
    }
    return quotas;
  }

  private QuotaLimit quota(Source source, String name, boolean enforce) {
    String unitValue = findQuota(source, name, RateLimiterProperties.Quota::getUnit);
    String unitPath = quotaPath(source, name, RateLimiterProperties.Quota::getUnit, "unit");
    QuotaUnit unit = parse(unitPath, unitValue, QuotaUnit.class, UNIT_RANGE);
    String periodValue = findQuota(source, name, RateLimiterProperties.Quota::getPeriod);
    QuotaPeriod period = parse(quotaPath(source, name, RateLimiterProperties.Quota::getPeriod,
        "period"), periodValue, QuotaPeriod.class, PERIOD_RANGE);
    BigDecimal limitValue = findQuota(source, name, RateLimiterProperties.Quota::getLimit);
    String limitPath = quotaPath(source, name, RateLimiterProperties.Quota::getLimit, "limit");
    long limit = quotaLimit(limitPath, limitValue, unit);
    List<Integer> thresholds = findQuota(source, name, RateLimiterProperties.Quota::getThresholds);
    Boolean own = findQuota(source, name, RateLimiterProperties.Quota::getEnforce);
    QuotaLimit quota;
    try {
      quota = QuotaLimit.of(name, unit, limit, period);
    } catch (IllegalArgumentException e) {
      String path = quotaPath(source, name, q -> null, "");
      throw new InvalidRateLimitPropertyException(path.substring(0, path.length() - name.length()
          - 2), name, "a quota name of letters, digits, '-', '_' or '.'");
    }
    try {
      quota = new QuotaLimit(name, unit, limit, period, zone(),
          thresholds == null ? List.of() : thresholds, enforce && (own == null || own));
    } catch (IllegalArgumentException e) {
      throw new InvalidRateLimitPropertyException(quotaPath(source, name,
          RateLimiterProperties.Quota::getThresholds, "thresholds"), thresholds, THRESHOLD_RANGE);
    }
    return quota;
  }

  private ZoneId zone() {
    ZoneId zone = properties.getQuotaZone();
    if (zone == null) {
      throw new InvalidRateLimitPropertyException(PREFIX + "quota-zone", null,
          "a time zone id, for example UTC or Europe/Berlin");
    }
    return zone;
  }

  /** A quota's limit in its unit: a whole number, or for cost an amount in micro-units. */
  private static long quotaLimit(String path, @Nullable BigDecimal value, QuotaUnit unit) {
    String range = unit == QuotaUnit.COST ? COST_LIMIT_RANGE : QUOTA_LIMIT_RANGE;
    if (value == null || value.signum() <= 0) {
      throw new InvalidRateLimitPropertyException(path,
          value == null ? null : value.toPlainString(), range);
    }
    long limit;
    try {
      limit = unit == QuotaUnit.COST ? ModelPrices.Price.micros(path, value)
          : value.longValueExact();
    } catch (IllegalArgumentException | ArithmeticException e) {
      throw new InvalidRateLimitPropertyException(path, value.toPlainString(), range);
    }
    if (limit > QuotaLimit.MAX_LIMIT) {
      throw new InvalidRateLimitPropertyException(path, value.toPlainString(), range);
    }
    return limit;
  }

  private static <E extends Enum<E>> E parse(String path, @Nullable String value, Class<E> type,
      String range) {
    if (value != null) {
      for (E e : type.getEnumConstants()) {
        if (e.name().equalsIgnoreCase(value.trim())) {
          return e;
        }
      }
    }
    throw new InvalidRateLimitPropertyException(path, value, range);
  }

  /** A field of quota {@code name} from the most specific source that sets it. */
  private static <T> @Nullable T findQuota(Source source, String name,
      Function<RateLimiterProperties.Quota, @Nullable T> getter) {
    for (Source s = source; s != null; s = s.parent) {
      RateLimiterProperties.Quota q = s.limits.quotas().get(name);
      T v = q == null ? null : getter.apply(q);
      if (v != null) {
        return v;
      }
    }
    return null;
  }

  /**
   * The property a field of quota {@code name} comes from: the most specific source that sets
   * it, else the most specific one that names the quota.
   */
  private static String quotaPath(Source source, String name,
      Function<RateLimiterProperties.Quota, @Nullable Object> getter, String field) {
    Source naming = null;
    for (Source s = source; s != null; s = s.parent) {
      RateLimiterProperties.Quota q = s.limits.quotas().get(name);
      if (q != null && getter.apply(q) != null) {
        return s.prefix + "quotas." + name + "." + field;
      }
      if (naming == null && s.limits.quotas().containsKey(name)) {
        naming = s;
      }
    }
    return (naming == null ? PREFIX : naming.prefix) + "quotas." + name + "." + field;
  }

  private Budget budget(String name, Source source, boolean enforce) {
    Long limit = source.find(Values::rpmLimit);
    checkLimit(source.path(Values::rpmLimit, "rpm.limit"), limit);
    Duration window = source.find(Values::rpmWindow);
    checkWindow(source.path(Values::rpmWindow, "rpm.window"), window);
    Double capacity = source.find(Values::burstCapacity);
    Double refill = source.find(Values::burstRefillPerSecond);
    String capacityPath = source.path(Values::burstCapacity, "burst.capacity");
    String refillPath = source.path(Values::burstRefillPerSecond, "burst.refill-per-second");
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
    return new Budget(name, new WindowLimit(limit, window), bucket, modelTokens(source),
        concurrency(source), quotas(source, enforce), null);
  }

  /** The limit on calls in flight, or null when none is set at any level of the source. */
  private static @Nullable ConcurrencyLimit concurrency(Source source) {
    Long limit = source.find(Values::concurrencyLimit);
    Duration lease = source.find(Values::concurrencyLeaseTimeout);
    String leasePath = source.path(Values::concurrencyLeaseTimeout, "concurrency.lease-timeout");
    if (lease != null && (lease.isZero() || lease.isNegative()
        || lease.compareTo(ConcurrencyLimit.MAX_LEASE) > 0)) {
      throw new InvalidRateLimitPropertyException(leasePath, lease, LEASE_RANGE);
    }
    if (limit == null) {
      return null;
    }
    checkLimit(source.path(Values::concurrencyLimit, "concurrency.limit"), limit);
    return new ConcurrencyLimit(limit, lease == null ? ConcurrencyLimit.DEFAULT_LEASE_TIMEOUT : lease);
  }

  /** The model-token (TPM) limit, or null when none is set at any level of the source. */
  private @Nullable ModelTokenLimit modelTokens(Source source) {
    Long limit = source.find(Values::tpmLimit);
    if (limit == null) {
      return null;
    }
    if (limit < 1) {
      throw new InvalidRateLimitPropertyException(
          source.path(Values::tpmLimit, "tpm.limit"), limit, TPM_RANGE);
    }
    Duration window = source.find(Values::tpmWindow);
    checkWindow(source.path(Values::tpmWindow, "tpm.window"), window);
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

  /** Checks the top-level properties that shape no budget. */
  private static void validate(RateLimiterProperties props) {
    anonymousKey(props);
    if (props.getStoreFailure() == null) {
      throw new InvalidRateLimitPropertyException(
          PREFIX + "store-failure", null, "local-fallback, deny or allow");
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
    estimator(props.getTpm());
    Duration refresh = props.getPlanRefresh();
    if (refresh == null || refresh.isZero() || refresh.isNegative()
        || refresh.compareTo(Duration.ofDays(1)) > 0) {
      throw new InvalidRateLimitPropertyException(PREFIX + "plan-refresh", refresh,
          "a positive duration of at most 1d, for example 5s");
    }
    if (props.getPlanCacheMaxKeys() < 1) {
      throw new InvalidRateLimitPropertyException(PREFIX + "plan-cache-max-keys",
          props.getPlanCacheMaxKeys(), "an integer >= 1");
    }
  }

  /** How a failure describes a valid upstream name. */
  private static final String UPSTREAM_NAME_RANGE =
      "a name of letters, digits, '-' or '_'";

  /**
   * The upstreams of {@code ratelimiter.upstreams} and which calls go to each.
   *
   * @param properties the properties
   * @param policies the translated policies (an upstream's policies must be among them)
   * @return the routes; {@link UpstreamRoutes#NONE} when no upstream is configured
   * @throws InvalidRateLimitPropertyException naming the first invalid property: a bad name, an
   *     upstream with no limit, a limit or lease out of range, a blank or repeated model glob, an
   *     unknown policy or one that two upstreams name
   */
  /** A longest wait for an upstream. */
  private static final String MAX_WAIT_RANGE = "a duration >= 0 and at most 1h, for example 10s (0: no wait)";

  /**
   * The rules of waiting for an upstream: each policy's longest wait (its own, else the top
   * level's), each plan's (its own, else its policy's), and each plan's weight and priority.
   *
   * @throws InvalidRateLimitPropertyException naming the first property out of range
   */
  static UpstreamWaits waits(RateLimiterProperties properties) {
    Duration top = checkWait(PREFIX + "max-wait", properties.getMaxWait());
    Map<String, Duration> policyWaits = new LinkedHashMap<>();
    policyWaits.put(RateLimitPolicies.DEFAULT_POLICY, top);
    properties.getPolicies().forEach((name, p) -> {
      Duration own = p == null ? null : p.getMaxWait();
      policyWaits.put(name, own == null ? top
          : checkWait(PREFIX + "policies." + name + ".max-wait", own));
    });
    Map<String, Map<String, Duration>> planWaits = new LinkedHashMap<>();
    Map<String, Double> weights = new LinkedHashMap<>();
    Map<String, Integer> priorities = new LinkedHashMap<>();
    properties.getPlans().forEach((plan, p) -> {
      if (p == null) {
        return;
      }
      String path = PREFIX + "plans." + plan + ".";
      Double weight = p.getWeight();
      if (weight != null) {
        if (!(weight > 0) || weight.isInfinite()) {
          throw new InvalidRateLimitPropertyException(path + "weight", weight,
              "a finite number > 0, for example 2 (1 when unset)");
        }
        weights.put(plan, weight);
      }
      if (p.getPriority() != null) {
        priorities.put(plan, p.getPriority());
      }
      Map<String, Duration> waits = new LinkedHashMap<>();
      p.getPolicies().forEach((policy, pp) -> {
        if (pp != null && pp.getMaxWait() != null) {
          waits.put(policy, checkWait(path + "policies." + policy + ".max-wait", pp.getMaxWait()));
        }
      });
      planWaits.put(plan, waits);
    });
    return new UpstreamWaits(policyWaits, planWaits, weights, priorities, top);
  }

  private static Duration checkWait(String property, @Nullable Duration wait) {
    if (wait == null || wait.isNegative() || wait.compareTo(Duration.ofHours(1)) > 0) {
      throw new InvalidRateLimitPropertyException(property, wait, MAX_WAIT_RANGE);
    }
    return wait;
  }

  /**
   * The most calls that wait for each upstream ({@code max-waiters}).
   *
   * @throws InvalidRateLimitPropertyException if one is below 1
   */
  static int maxWaiters(String name, RateLimiterProperties.Upstream upstream) {
    if (upstream.getMaxWaiters() < 1) {
      throw new InvalidRateLimitPropertyException(PREFIX + "upstreams." + name + ".max-waiters",
          upstream.getMaxWaiters(), "a number >= 1 (1000 when unset)");
    }
    return upstream.getMaxWaiters();
  }

  static UpstreamRoutes upstreams(RateLimiterProperties properties, RateLimitPolicies policies) {
    Map<String, RateLimiterProperties.Upstream> configured = properties.getUpstreams();
    if (configured == null || configured.isEmpty()) {
      return UpstreamRoutes.NONE;
    }
    UpstreamRoutes.Builder routes = UpstreamRoutes.builder();
    Map<String, String> globOwners = new LinkedHashMap<>();
    Map<String, String> policyOwners = new LinkedHashMap<>();
    for (Map.Entry<String, RateLimiterProperties.Upstream> e : configured.entrySet()) {
      String name = e.getKey();
      String path = PREFIX + "upstreams." + name + ".";
      if (name == null || !name.matches("[A-Za-z0-9_-]+")) {
        throw new InvalidRateLimitPropertyException(PREFIX + "upstreams", name, UPSTREAM_NAME_RANGE);
      }
      RateLimiterProperties.Upstream u = e.getValue();
      if (u == null || u.getRpm() == null && u.getTpm() == null && u.getConcurrency() == null) {
        throw new InvalidRateLimitPropertyException(path + "rpm", null,
            "a limit: at least one of " + path + "rpm, " + path + "tpm or " + path + "concurrency");
      }
      Duration margin = u.getMargin() == null ? UPSTREAM_MARGIN : u.getMargin();
      if (margin.isNegative() || margin.compareTo(Duration.ofMinutes(1)) >= 0) {
        throw new InvalidRateLimitPropertyException(path + "margin", margin, MARGIN_RANGE);
      }
      // the provider counts a call when it arrives: each counts a minute and the margin here
      Duration window = Duration.ofMinutes(1).plus(margin);
      WindowLimit rpm = null;
      if (u.getRpm() != null) {
        checkLimit(path + "rpm", u.getRpm());
        rpm = new WindowLimit(u.getRpm(), window);
      }
      ModelTokenLimit tpm = null;
      if (u.getTpm() != null) {
        if (u.getTpm() < 1) {
          throw new InvalidRateLimitPropertyException(path + "tpm", u.getTpm(), TPM_RANGE);
        }
        tpm = new ModelTokenLimit(u.getTpm(), window);
      }
      Duration lease = u.getLeaseTimeout();
      if (lease != null && (lease.isZero() || lease.isNegative()
          || lease.compareTo(ConcurrencyLimit.MAX_LEASE) > 0)) {
        throw new InvalidRateLimitPropertyException(path + "lease-timeout", lease, LEASE_RANGE);
      }
      ConcurrencyLimit concurrency = null;
      if (u.getConcurrency() != null) {
        checkLimit(path + "concurrency", u.getConcurrency());
        concurrency = new ConcurrencyLimit(u.getConcurrency(),
            lease == null ? ConcurrencyLimit.DEFAULT_LEASE_TIMEOUT : lease);
      }
      List<String> models = u.getModels() == null ? List.of() : u.getModels();
      for (int i = 0; i < models.size(); i++) {
        String glob = models.get(i);
        String property = path + "models[" + i + "]";
        if (glob == null || glob.isBlank() || !glob.equals(glob.strip())) {
          throw new InvalidRateLimitPropertyException(property, glob,
              "a model name or glob, not blank and without surrounding spaces, for example gpt-4o*");
        }
        String owner = globOwners.putIfAbsent(glob, name);
        if (owner != null) {
          throw new InvalidRateLimitPropertyException(property, glob, "a model glob no other"
              + " upstream names (upstream '" + owner + "' names it: a model glob belongs to one"
              + " upstream)");
        }
      }
      List<String> routed = u.getPolicies() == null ? List.of() : u.getPolicies();
      for (int i = 0; i < routed.size(); i++) {
        String policy = routed.get(i);
        String property = path + "policies[" + i + "]";
        if (policy == null || !policies.contains(policy)) {
          throw new InvalidRateLimitPropertyException(property, policy,
              "one of the policies " + policies.all().keySet());
        }
        String owner = policyOwners.putIfAbsent(policy, name);
        if (owner != null && !owner.equals(name)) {
          throw new InvalidRateLimitPropertyException(property, policy, "a policy no other"
              + " upstream names (upstream '" + owner + "' names it: a policy's calls go to one"
              + " upstream)");
        }
      }
      if (models.isEmpty() && routed.isEmpty()) {
        throw new InvalidRateLimitPropertyException(path + "models", null, "at least one model glob"
            + " in " + path + "models or one policy in " + path + "policies: no call would go to"
            + " upstream '" + name + "'");
      }
      routes.upstream(new io.github.llmratelimiter.core.Upstream(name, rpm, tpm, concurrency),
          models, new LinkedHashSet<>(routed));
    }
    return routes.build();
  }

  /**
   * The key that requests without an API key share.
   *
   * @throws InvalidRateLimitPropertyException if it is blank
   */
  static String anonymousKey(RateLimiterProperties props) {
    String key = props.getAnonymousKey();
    if (key == null || key.isBlank()) {
      throw new InvalidRateLimitPropertyException(PREFIX + "anonymous-key", key, "a non-blank string");
    }
    return key;
  }

  /**
   * The default estimator of {@code ratelimiter.tpm.*}.
   *
   * @throws InvalidRateLimitPropertyException naming the first invalid property
   */
  static ModelTokenEstimator estimator(RateLimiterProperties.Tpm tpm) {
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
    return ModelTokenEstimator.of(tpm.getBytesPerToken(), tpm.getTokensPerMessage(),
        tpm.getTokensPerRequest(), tpm.getDefaultCompletionTokens());
  }

  /**
   * How much of a request body the limiter accepts and reads.
   *
   * @throws InvalidRateLimitPropertyException naming the first invalid property
   */
  static BodyLimits bodyLimits(RateLimiterWebProperties web) {
    DataSize maxBody = web.getMaxBody();
    if (maxBody == null || maxBody.toBytes() < 1 || maxBody.toBytes() > BodyLimits.MAX_BUFFER) {
      throw new InvalidRateLimitPropertyException(BodyLimits.MAX_BODY, maxBody,
          "a size from 1B to " + BodyLimits.MAX_BUFFER + "B, for example 4MB");
    }
    DataSize peek = web.getMaxBodyPeek() == null ? maxBody : web.getMaxBodyPeek();
    if (peek.toBytes() < 1 || peek.toBytes() > maxBody.toBytes()) {
      throw new InvalidRateLimitPropertyException(BodyLimits.MAX_BODY_PEEK, peek,
          "a size from 1B to " + BodyLimits.MAX_BODY + " (" + maxBody + "), or unset for "
              + BodyLimits.MAX_BODY);
    }
    boolean read = web.isModelFromBody();
    return new BodyLimits(maxBody.toBytes(), peek.toBytes(), read,
        read ? ModelSource.BODY_THEN_QUERY : ModelSource.QUERY);
  }

  /** The quotas of a level of the properties, an empty quota for a name bound to nothing. */
  private static Map<String, RateLimiterProperties.Quota> quotasOf(
      @Nullable Map<String, RateLimiterProperties.Quota> quotas) {
    Map<String, RateLimiterProperties.Quota> copy = new LinkedHashMap<>();
    if (quotas != null) {
      quotas.forEach((name, q) -> copy.put(name, q == null ? new RateLimiterProperties.Quota() : q));
    }
    return copy;
  }

  /**
   * Where a value comes from: the most specific settings first (a model's, then the policy's, then
   * the top level's).
   */
  private record Source(Values limits, String prefix, @Nullable Source parent) {

    /** The most specific value set, or {@code null} when no level sets it. */
    <T> @Nullable T find(Function<Values, @Nullable T> getter) {
      for (Source s = this; s != null; s = s.parent) {
        T v = getter.apply(s.limits);
        if (v != null) {
          return v;
        }
      }
      return null;
    }

    /** The full name of the property {@link #find} takes its value from. */
    String path(Function<Values, @Nullable Object> getter, String suffix) {
      for (Source s = this; s != null; s = s.parent) {
        if (getter.apply(s.limits) != null) {
          return s.prefix + suffix;
        }
      }
      return PREFIX + suffix;
    }
  }

  /**
   * The limits one level of the properties sets: the top level, a policy, a plan's policy or a
   * model; a {@code null} value is not set there and is inherited.
   */
  private record Values(
      @Nullable Long rpmLimit,
      @Nullable Duration rpmWindow,
      @Nullable Double burstCapacity,
      @Nullable Double burstRefillPerSecond,
      @Nullable Long tpmLimit,
      @Nullable Duration tpmWindow,
      @Nullable Long concurrencyLimit,
      @Nullable Duration concurrencyLeaseTimeout,
      Map<String, RateLimiterProperties.Quota> quotas) {

    static Values of(RateLimiterProperties.Limits l) {
      return new Values(l.getRpm().getLimit(), l.getRpm().getWindow(), l.getBurst().getCapacity(),
          l.getBurst().getRefillPerSecond(), l.getTpm().getLimit(), l.getTpm().getWindow(),
          l.getConcurrency().getLimit(), l.getConcurrency().getLeaseTimeout(),
          quotasOf(l.getQuotas()));
    }
  }
}
