package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.MissingKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.StoreFailure;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration of the rate limiter, under the prefix {@code ratelimiter}.
 *
 * <p>The top-level {@code rpm}, {@code burst}, {@code scope} and {@code models} describe the policy
 * named {@code default}; every named policy under {@code policies} inherits the top-level {@code
 * rpm} and {@code burst} values it does not set. A policy's {@code parent} names the policy one
 * level above it: a call is decided on the whole chain, root first, in one atomic store call.
 */
@ConfigurationProperties("ratelimiter")
public class RateLimiterProperties {

  /** The name of the policy built from the top-level settings. */
  public static final String DEFAULT_POLICY = RateLimitPolicies.DEFAULT_POLICY;

  /** Whether rate limiting is enabled at all. */
  private boolean enabled = true;

  /**
   * How the window, the bucket and the model tokens (and the levels of a hierarchy) compose:
   * "reserve-commit" (the default: every budget of every level is charged or none, so a client
   * that waits the advised Retry-After is admitted) or "sequential" (the core's in-process order:
   * the window first, and a burst or model-token deny keeps its window slot).
   */
  private Composition composition = Composition.RESERVE_COMMIT;

  /** The policy applied where none is named (a route or an annotation without a policy). */
  private String defaultPolicy = DEFAULT_POLICY;

  /** Requests-per-window limit of the default policy, inherited by every named policy. */
  private final Rpm rpm = new Rpm();

  /** Token bucket of the default policy, inherited by every named policy; unset means no bucket. */
  private final Burst burst = new Burst();

  /**
   * Model tokens per window (TPM) of the default policy, inherited by every named policy, and how a
   * request's model tokens are estimated before the call; without a limit there is no TPM budget.
   */
  private final Tpm tpm = new Tpm();

  /** What the default policy's budgets are counted per. */
  private KeyScope scope = KeyScope.API_KEY;

  /** Per-model overrides of the default policy, by model name (for example "gpt-4o"). */
  private Map<String, Limits> models = new LinkedHashMap<>();

  /** Named policies, by name; each overrides the top-level limits it sets. */
  private Map<String, Policy> policies = new LinkedHashMap<>();

  /**
   * The plan of an API key that has none assigned: one of "plans", or "default" (the policies as
   * configured) when no plan of that name is declared.
   */
  private String defaultPlan = RateLimitPolicies.DEFAULT_PLAN;

  /**
   * Plans, by name: limit overrides applied on top of the policies for the API keys that have the
   * plan (assigned at runtime, or the default plan). A plan changes only limits; it keeps every
   * window length and adds no bucket, model-token or concurrency limit a policy lacks.
   */
  private Map<String, Plan> plans = new LinkedHashMap<>();

  /**
   * The longest an instance decides under a plan it read from the store before reading it again:
   * an assignment made on any instance applies on every instance within this time. Plans are
   * cached per key and read again in the background after half of it, so a decision in steady
   * state reads no plan from the store.
   */
  private Duration planRefresh = Duration.ofSeconds(5);

  /** The most API keys whose plans an instance caches; past it an arbitrary one is dropped. */
  private int planCacheMaxKeys = 100_000;

  /**
   * What happens to a request without an API key (or without what its route's key or key
   * expression, or its @RateLimited key, is counted by): "reject" (a 401 problem response, or a
   * 400 for a client address or an expression that gives nothing) or "anonymous" (all such
   * requests share the budget of the key "anonymous-key" names, "anonymous" by
   * default).
   */
  private MissingKey missingKey = MissingKey.REJECT;

  /** The key that requests without an API key share when "missing-key" is anonymous. */
  private String anonymousKey = "anonymous";

  /**
   * What a decision does when the store fails (for example Redis is unreachable): "local-fallback"
   * (the default: on the Redis store, an in-memory store decides on this instance's share of each
   * budget until Redis answers again; on other stores as deny), "deny" (a 503 problem response with
   * Retry-After) or "allow" (the call passes unlimited).
   */
  private StoreFailure storeFailure = StoreFailure.LOCAL_FALLBACK;

  /** Enforcement of "@RateLimited" on Spring bean methods (a Spring AOP interceptor). */
  private final Aspect aspect = new Aspect();

  /** The in-memory store (used when no other RateLimitStore bean is defined). */
  private final InMemory inMemory = new InMemory();

  /** The Actuator endpoint "ratelimiter". */
  private final Endpoint endpoint = new Endpoint();

  /** Micrometer metrics. */
  private final Metrics metrics = new Metrics();

  /**
   * Where budgets are kept: "memory" (in this process) or "redis" (shared by every instance; needs
   * rate-limiter-redis and spring-boot-starter-data-redis, and uses the spring.data.redis.*
   * connection).
   */
  private StoreType store = StoreType.MEMORY;

  /**
   * Budgets of the default policy over calendar periods, by quota name (letters, digits, '-', '_'
   * or '.'): for example daily-requests: {unit: requests, limit: 100, period: day}. Every
   * named policy inherits them, quota by quota and field by field, as it inherits rpm; a policy
   * (or a model, or a plan) that names a quota of the same name overrides the fields it sets.
   */
  private Map<String, Quota> quotas = new LinkedHashMap<>();

  /**
   * The time zone whose calendar the quotas' periods follow (an hour, a day from midnight, a week
   * from Monday, a month from its first day), for example UTC (the default) or Europe/Berlin.
   */
  private ZoneId quotaZone = ZoneOffset.UTC;

  /**
   * A file in which the in-memory store keeps its quota counters across restarts: read at
   * start-up (a missing file is a first start; a corrupt or foreign one stops start-up), written
   * every quota-file-interval and at shutdown, atomically. Unset (the default): the counters live
   * as long as the process. The file holds the keys as the store does (API keys): keep it as
   * private as they are. Not for the Redis store, which keeps quotas in Redis.
   */
  private @Nullable Path quotaFile;

  /** How often the in-memory store writes its quota counters to ratelimiter.quota-file. */
  private Duration quotaFileInterval = Duration.ofSeconds(60);

  /**
   * Whether the default policy (and every named policy that does not set its own) denies the
   * calls its limits deny; false is shadow mode: every call is decided, charged, counted and
   * reported (headers, metrics, events) but none is denied, and the outcome says which would have
   * been. Every quota of a policy in shadow mode is a shadow quota.
   */
  private boolean enforce = true;

  /**
   * The longest a call of the default policy (and of every named policy that does not set its
   * own) waits for its upstream when it fits its own budgets but not the upstream's; 0 answers
   * such a call at once with a 429. Waiting calls are served fairly between tenants (see
   * docs/upstreams.md).
   */
  private Duration maxWait = Duration.ZERO;

  /**
   * The price of each model per million tokens, in the operator's currency (the library names no
   * currency; amounts with at most 6 decimals), by model name as requests name it: what a call
   * costs for the quotas of unit cost. The key "default" is the price of every model without
   * its own; a level with a cost quota needs a price for each model it serves.
   */
  private Map<String, Price> prices = new LinkedHashMap<>();

  /**
   * The secret of the ids the Actuator endpoint gives API keys (HMAC-SHA-256 of the key under this
   * secret), at least 16 bytes; instances that share a store set the same secret so that their ids
   * agree. On the Redis store (with hash-keys) it also keys the hashes that name API keys in Redis,
   * so that they cannot be reversed by hashing guessed keys. Unset: a random secret per instance
   * for the ids, generated at start-up, and plain SHA-256 in Redis.
   */
  private @Nullable String keyIdSecret;

  /**
   * The provider accounts the gateway's calls share (an OpenAI organisation key, an Azure
   * deployment), by name (letters, digits, '-' or '_'), with the limits the provider holds
   * each to: for example openai-main: {rpm: 500, tpm: 200000, models: ["gpt-4o*"]}. A call routed
   * to an upstream is admitted only if it fits its own budgets and the upstream's, in the same
   * store call; what the provider's rate-limit headers report corrects the upstream's state (see
   * docs/upstreams.md). A call whose model matches one of an upstream's "models" goes there, else a
   * call whose policy is one of an upstream's "policies"; a call that matches none has no upstream.
   */
  private Map<String, Upstream> upstreams = new LinkedHashMap<>();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public Composition getComposition() {
    return composition;
  }

  public void setComposition(Composition composition) {
    this.composition = composition;
  }

  public String getDefaultPolicy() {
    return defaultPolicy;
  }

  public void setDefaultPolicy(String defaultPolicy) {
    this.defaultPolicy = defaultPolicy;
  }

  public Rpm getRpm() {
    return rpm;
  }

  public Burst getBurst() {
    return burst;
  }

  public Tpm getTpm() {
    return tpm;
  }

  public KeyScope getScope() {
    return scope;
  }

  public void setScope(KeyScope scope) {
    this.scope = scope;
  }

  public Map<String, Limits> getModels() {
    return models;
  }

  public void setModels(Map<String, Limits> models) {
    this.models = models;
  }

  public Map<String, Policy> getPolicies() {
    return policies;
  }

  public void setPolicies(Map<String, Policy> policies) {
    this.policies = policies;
  }

  public String getDefaultPlan() {
    return defaultPlan;
  }

  public void setDefaultPlan(String defaultPlan) {
    this.defaultPlan = defaultPlan;
  }

  public Map<String, Plan> getPlans() {
    return plans;
  }

  public void setPlans(Map<String, Plan> plans) {
    this.plans = plans;
  }

  public Duration getPlanRefresh() {
    return planRefresh;
  }

  public void setPlanRefresh(Duration planRefresh) {
    this.planRefresh = planRefresh;
  }

  public int getPlanCacheMaxKeys() {
    return planCacheMaxKeys;
  }

  public void setPlanCacheMaxKeys(int planCacheMaxKeys) {
    this.planCacheMaxKeys = planCacheMaxKeys;
  }

  public MissingKey getMissingKey() {
    return missingKey;
  }

  public void setMissingKey(MissingKey missingKey) {
    this.missingKey = missingKey;
  }

  public String getAnonymousKey() {
    return anonymousKey;
  }

  public void setAnonymousKey(String anonymousKey) {
    this.anonymousKey = anonymousKey;
  }

  public StoreFailure getStoreFailure() {
    return storeFailure;
  }

  public void setStoreFailure(StoreFailure storeFailure) {
    this.storeFailure = storeFailure;
  }

  public Aspect getAspect() {
    return aspect;
  }

  public InMemory getInMemory() {
    return inMemory;
  }

  public Endpoint getEndpoint() {
    return endpoint;
  }

  public Metrics getMetrics() {
    return metrics;
  }

  public StoreType getStore() {
    return store;
  }

  public void setStore(StoreType store) {
    this.store = store;
  }

  public Map<String, Quota> getQuotas() {
    return quotas;
  }

  public void setQuotas(Map<String, Quota> quotas) {
    this.quotas = quotas;
  }

  public ZoneId getQuotaZone() {
    return quotaZone;
  }

  public void setQuotaZone(ZoneId quotaZone) {
    this.quotaZone = quotaZone;
  }

  public @Nullable Path getQuotaFile() {
    return quotaFile;
  }

  public void setQuotaFile(@Nullable Path quotaFile) {
    this.quotaFile = quotaFile;
  }

  public Duration getQuotaFileInterval() {
    return quotaFileInterval;
  }

  public void setQuotaFileInterval(Duration quotaFileInterval) {
    this.quotaFileInterval = quotaFileInterval;
  }

  public Duration getMaxWait() {
    return maxWait;
  }

  public void setMaxWait(Duration maxWait) {
    this.maxWait = maxWait;
  }

  public boolean isEnforce() {
    return enforce;
  }

  public void setEnforce(boolean enforce) {
    this.enforce = enforce;
  }

  public Map<String, Price> getPrices() {
    return prices;
  }

  public void setPrices(Map<String, Price> prices) {
    this.prices = prices;
  }

  public Map<String, Upstream> getUpstreams() {
    return upstreams;
  }

  public void setUpstreams(Map<String, Upstream> upstreams) {
    this.upstreams = upstreams;
  }

  public @Nullable String getKeyIdSecret() {
    return keyIdSecret;
  }

  public void setKeyIdSecret(@Nullable String keyIdSecret) {
    this.keyIdSecret = keyIdSecret;
  }

  /** The top-level requests-per-window limit, with defaults. */
  public static class Rpm {

    /** Requests admitted per window and key. */
    private long limit = 60;

    /** The window's length. */
    private Duration window = Duration.ofMinutes(1);

    public long getLimit() {
      return limit;
    }

    public void setLimit(long limit) {
      this.limit = limit;
    }

    public Duration getWindow() {
      return window;
    }

    public void setWindow(Duration window) {
      this.window = window;
    }
  }

  /** The top-level token bucket; without a capacity there is no bucket. */
  public static class Burst {

    /** Tokens the bucket holds when full (the largest burst); unset means no bucket. */
    private @Nullable Double capacity;

    /** Tokens regained per second; required with a capacity; 0 means the bucket never refills. */
    private @Nullable Double refillPerSecond;

    public @Nullable Double getCapacity() {
      return capacity;
    }

    public void setCapacity(@Nullable Double capacity) {
      this.capacity = capacity;
    }

    public @Nullable Double getRefillPerSecond() {
      return refillPerSecond;
    }

    public void setRefillPerSecond(@Nullable Double refillPerSecond) {
      this.refillPerSecond = refillPerSecond;
    }
  }

  /** A requests-per-window override: each unset value is inherited. */
  public static class RpmOverride {

    /** Requests admitted per window and key; inherited when unset. */
    private @Nullable Long limit;

    /** The window's length; inherited when unset. */
    private @Nullable Duration window;

    public @Nullable Long getLimit() {
      return limit;
    }

    public void setLimit(@Nullable Long limit) {
      this.limit = limit;
    }

    public @Nullable Duration getWindow() {
      return window;
    }

    public void setWindow(@Nullable Duration window) {
      this.window = window;
    }
  }

  /** Limits that override inherited ones: a model's overrides. */
  public static class Limits {

    /** Requests-per-window override. */
    private final RpmOverride rpm = new RpmOverride();

    /** Token bucket override. */
    private final Burst burst = new Burst();

    /** Model tokens per window (TPM) override. */
    private final TpmOverride tpm = new TpmOverride();

    /**
     * The most calls of an API key in flight at once (LiteLLM's max_parallel_requests): a call
     * holds a slot from its admission until its response completes, its stream ends, its client
     * disconnects or its handler fails; unset means no limit (or the one inherited).
     */
    private final Concurrency concurrency = new Concurrency();

    /**
     * Budgets over calendar periods, by quota name; each field a quota of the same name sets one
     * level up (the policy, the top level) is inherited when unset here.
     */
    private Map<String, Quota> quotas = new LinkedHashMap<>();

    public RpmOverride getRpm() {
      return rpm;
    }

    public Map<String, Quota> getQuotas() {
      return quotas;
    }

    public void setQuotas(Map<String, Quota> quotas) {
      this.quotas = quotas;
    }

    public Burst getBurst() {
      return burst;
    }

    public TpmOverride getTpm() {
      return tpm;
    }

    public Concurrency getConcurrency() {
      return concurrency;
    }
  }

  /**
   * A budget over a calendar period: at most {@code limit} of {@code unit} per {@code period}, per
   * key. Every field is inherited from the quota of the same name one level up when unset.
   */
  public static class Quota {

    /**
     * What the quota counts: requests (each admitted call), tokens (model tokens, prompt and
     * completion, from the response's usage) or cost (the calls' cost from ratelimiter.prices).
     */
    private @Nullable String unit;

    /**
     * The most the quota admits per period: a whole number of requests or tokens, or for cost an
     * amount of the operator's currency with at most 6 decimals (for example 50 or 0.25).
     */
    private @Nullable BigDecimal limit;

    /** The calendar period: hour, day, week (from Monday) or month, in ratelimiter.quota-zone. */
    private @Nullable String period;

    /**
     * Percentages of the limit (1 to 100, ascending) whose first crossing in a period publishes a
     * QuotaThresholdCrossedEvent, counts a metric and logs a warning, once per key and period.
     */
    private @Nullable List<Integer> thresholds;

    /**
     * Whether the quota denies; false counts and reports it (a shadow quota) without denying.
     * Enforced unless set; a policy in shadow mode makes every quota shadow.
     */
    private @Nullable Boolean enforce;

    public @Nullable String getUnit() {
      return unit;
    }

    public void setUnit(@Nullable String unit) {
      this.unit = unit;
    }

    public @Nullable BigDecimal getLimit() {
      return limit;
    }

    public void setLimit(@Nullable BigDecimal limit) {
      this.limit = limit;
    }

    public @Nullable String getPeriod() {
      return period;
    }

    public void setPeriod(@Nullable String period) {
      this.period = period;
    }

    public @Nullable List<Integer> getThresholds() {
      return thresholds;
    }

    public void setThresholds(@Nullable List<Integer> thresholds) {
      this.thresholds = thresholds;
    }

    public @Nullable Boolean getEnforce() {
      return enforce;
    }

    public void setEnforce(@Nullable Boolean enforce) {
      this.enforce = enforce;
    }
  }

  /** The price of a model per million tokens, in the operator's currency. */
  public static class Price {

    /** The price of a million prompt tokens, for example 2.50. */
    private @Nullable BigDecimal input;

    /** The price of a million completion tokens, for example 10. */
    private @Nullable BigDecimal output;

    /**
     * The price of a million prompt tokens served from the provider's prompt cache
     * (prompt_tokens_details.cached_tokens); the input price when unset.
     */
    private @Nullable BigDecimal cachedInput;

    public @Nullable BigDecimal getInput() {
      return input;
    }

    public void setInput(@Nullable BigDecimal input) {
      this.input = input;
    }

    public @Nullable BigDecimal getOutput() {
      return output;
    }

    public void setOutput(@Nullable BigDecimal output) {
      this.output = output;
    }

    public @Nullable BigDecimal getCachedInput() {
      return cachedInput;
    }

    public void setCachedInput(@Nullable BigDecimal cachedInput) {
      this.cachedInput = cachedInput;
    }
  }

  /** A limit on the calls of an API key in flight at once. */
  public static class Concurrency {

    /** The most calls of an API key in flight at once; inherited when unset (no limit by default). */
    private @Nullable Long limit;

    /**
     * The longest a call holds its slot, a last-resort cap: past it the slot is free even if the
     * call never ended. On Redis a slot also frees once its instance stops renewing it
     * (ratelimiter.redis.slot-lease), so a crashed instance's slots free within the slot lease;
     * inherited when unset, else 10m.
     */
    private @Nullable Duration leaseTimeout;

    public @Nullable Long getLimit() {
      return limit;
    }

    public void setLimit(@Nullable Long limit) {
      this.limit = limit;
    }

    public @Nullable Duration getLeaseTimeout() {
      return leaseTimeout;
    }

    public void setLeaseTimeout(@Nullable Duration leaseTimeout) {
      this.leaseTimeout = leaseTimeout;
    }
  }

  /** A provider account the gateway's calls share, with the provider's limits and its routes. */
  public static class Upstream {

    /** Requests per minute the provider allows this account, for every caller together. */
    private @Nullable Long rpm;

    /** Model tokens per minute the provider allows this account, for every caller together. */
    private @Nullable Long tpm;

    /** The most calls in flight at once on this account, for every caller together. */
    private @Nullable Long concurrency;

    /**
     * The longest a call holds its slot on the account's "concurrency" limit, a last-resort cap
     * (10m when unset).
     */
    private @Nullable Duration leaseTimeout;

    /**
     * How much longer than a minute a call counts against "rpm" and "tpm": the provider counts a
     * call when it arrives and the gateway when it admits it, so a call admitted the moment the
     * gateway's minute frees can reach the provider before the provider's own minute frees when
     * it travels faster than the call that left. The margin covers that variation of the way to
     * the provider (1s when unset; 0 for none; less than a minute).
     */
    private @Nullable Duration margin;

    /**
     * Globs of the models whose calls go to this account, for example "gpt-4o*" ('*' matches any
     * run of characters); a model matching several globs goes to the longest. A model glob
     * belongs to one upstream.
     */
    private List<String> models = new java.util.ArrayList<>();

    /**
     * The policies whose calls go to this account when their model matches no upstream's glob;
     * a policy belongs to one upstream.
     */
    private List<String> policies = new java.util.ArrayList<>();

    /**
     * The most calls that wait for this account at once (see max-wait); one more is answered at
     * once with a 429, unless its tenant waits with fewer calls than the tenant that waits with
     * the most, whose latest call then leaves.
     */
    private int maxWaiters = 1000;

    public int getMaxWaiters() {
      return maxWaiters;
    }

    public void setMaxWaiters(int maxWaiters) {
      this.maxWaiters = maxWaiters;
    }

    public @Nullable Long getRpm() {
      return rpm;
    }

    public void setRpm(@Nullable Long rpm) {
      this.rpm = rpm;
    }

    public @Nullable Long getTpm() {
      return tpm;
    }

    public void setTpm(@Nullable Long tpm) {
      this.tpm = tpm;
    }

    public @Nullable Long getConcurrency() {
      return concurrency;
    }

    public void setConcurrency(@Nullable Long concurrency) {
      this.concurrency = concurrency;
    }

    public @Nullable Duration getLeaseTimeout() {
      return leaseTimeout;
    }

    public void setLeaseTimeout(@Nullable Duration leaseTimeout) {
      this.leaseTimeout = leaseTimeout;
    }

    public @Nullable Duration getMargin() {
      return margin;
    }

    public void setMargin(@Nullable Duration margin) {
      this.margin = margin;
    }

    public List<String> getModels() {
      return models;
    }

    public void setModels(List<String> models) {
      this.models = models;
    }

    public List<String> getPolicies() {
      return policies;
    }

    public void setPolicies(List<String> policies) {
      this.policies = policies;
    }
  }

  /** A plan: limit overrides of the policies, by policy name. */
  public static class Plan {

    /**
     * Overrides by policy name (one of "policies", or "default"): the limits of the policy's own
     * level and, under "models", of the models it configures.
     */
    private Map<String, PlanPolicy> policies = new LinkedHashMap<>();

    /**
     * The weight of this plan's API keys while calls wait for an upstream: a key's share of a
     * busy upstream grows with its weight (2 serves twice the model tokens of a key weighing 1);
     * a number above 0, 1 when unset.
     */
    private @Nullable Double weight;

    /**
     * The priority class of this plan's calls while they wait for an upstream: a lower class is
     * always served first; 0 when unset.
     */
    private @Nullable Integer priority;

    public @Nullable Double getWeight() {
      return weight;
    }

    public void setWeight(@Nullable Double weight) {
      this.weight = weight;
    }

    public @Nullable Integer getPriority() {
      return priority;
    }

    public void setPriority(@Nullable Integer priority) {
      this.priority = priority;
    }

    public Map<String, PlanPolicy> getPolicies() {
      return policies;
    }

    public void setPolicies(Map<String, PlanPolicy> policies) {
      this.policies = policies;
    }
  }

  /** A plan's overrides of one policy: its own limits and its models'. */
  public static class PlanPolicy extends Limits {

    /** Overrides of the models the policy configures, by model name. */
    private Map<String, Limits> models = new LinkedHashMap<>();

    /**
     * The longest this plan's calls of the policy wait for their upstream; inherits the policy's
     * max-wait when unset.
     */
    private @Nullable Duration maxWait;

    public @Nullable Duration getMaxWait() {
      return maxWait;
    }

    public void setMaxWait(@Nullable Duration maxWait) {
      this.maxWait = maxWait;
    }

    public Map<String, Limits> getModels() {
      return models;
    }

    public void setModels(Map<String, Limits> models) {
      this.models = models;
    }
  }

  /** A named policy: limits, what they are counted per, per-model overrides and a parent level. */
  public static class Policy extends Limits {

    /** What this policy's budgets are counted per; inherits the top-level scope when unset. */
    private @Nullable KeyScope scope;

    /** Per-model overrides of this policy, by model name. */
    private Map<String, Limits> models = new LinkedHashMap<>();

    /**
     * The policy one level above this one in a hierarchy (for example a per-key budget above a
     * per-key-and-model one); both are decided in one atomic store call.
     */
    private @Nullable String parent;

    /**
     * Whether this policy denies the calls its limits deny; false is shadow mode (see
     * ratelimiter.enforce), whose value it inherits when unset.
     */
    private @Nullable Boolean enforce;

    /**
     * The longest this policy's calls wait for their upstream when they fit their own budgets
     * but not the upstream's; 0 answers them at once with a 429; inherits ratelimiter.max-wait
     * when unset.
     */
    private @Nullable Duration maxWait;

    public @Nullable Duration getMaxWait() {
      return maxWait;
    }

    public void setMaxWait(@Nullable Duration maxWait) {
      this.maxWait = maxWait;
    }

    public @Nullable Boolean getEnforce() {
      return enforce;
    }

    public void setEnforce(@Nullable Boolean enforce) {
      this.enforce = enforce;
    }

    public @Nullable KeyScope getScope() {
      return scope;
    }

    public void setScope(@Nullable KeyScope scope) {
      this.scope = scope;
    }

    public Map<String, Limits> getModels() {
      return models;
    }

    public void setModels(Map<String, Limits> models) {
      this.models = models;
    }

    public @Nullable String getParent() {
      return parent;
    }

    public void setParent(@Nullable String parent) {
      this.parent = parent;
    }
  }

  /**
   * The top-level model-token budget (TPM) and the default estimator's rule. Model tokens are the
   * prompt and completion tokens an LLM call consumes, not the burst bucket's permits.
   */
  public static class Tpm {

    /** Model tokens admitted per window and key; unset means no TPM budget. */
    private @Nullable Long limit;

    /** The model-token window's length. */
    private Duration window = Duration.ofMinutes(1);

    /**
     * UTF-8 bytes of prompt text counted as one model token by the default estimator (4 matches
     * the characters/4 rule of thumb for English; 1 makes the prompt estimate an upper bound for
     * byte-level BPE tokenizers).
     */
    private int bytesPerToken = 4;

    /** Model tokens the default estimator adds per chat message (role and framing). */
    private int tokensPerMessage = 4;

    /** Model tokens the default estimator adds per request (the reply's priming). */
    private int tokensPerRequest = 3;

    /**
     * Completion tokens the default estimator assumes when a request sets none of max_tokens,
     * max_completion_tokens and max_output_tokens.
     */
    private long defaultCompletionTokens = 256;

    public @Nullable Long getLimit() {
      return limit;
    }

    public void setLimit(@Nullable Long limit) {
      this.limit = limit;
    }

    public Duration getWindow() {
      return window;
    }

    public void setWindow(Duration window) {
      this.window = window;
    }

    public int getBytesPerToken() {
      return bytesPerToken;
    }

    public void setBytesPerToken(int bytesPerToken) {
      this.bytesPerToken = bytesPerToken;
    }

    public int getTokensPerMessage() {
      return tokensPerMessage;
    }

    public void setTokensPerMessage(int tokensPerMessage) {
      this.tokensPerMessage = tokensPerMessage;
    }

    public int getTokensPerRequest() {
      return tokensPerRequest;
    }

    public void setTokensPerRequest(int tokensPerRequest) {
      this.tokensPerRequest = tokensPerRequest;
    }

    public long getDefaultCompletionTokens() {
      return defaultCompletionTokens;
    }

    public void setDefaultCompletionTokens(long defaultCompletionTokens) {
      this.defaultCompletionTokens = defaultCompletionTokens;
    }
  }

  /** A model-token (TPM) override: each unset value is inherited. */
  public static class TpmOverride {

    /** Model tokens admitted per window and key; inherited when unset. */
    private @Nullable Long limit;

    /** The model-token window's length; inherited when unset. */
    private @Nullable Duration window;

    public @Nullable Long getLimit() {
      return limit;
    }

    public void setLimit(@Nullable Long limit) {
      this.limit = limit;
    }

    public @Nullable Duration getWindow() {
      return window;
    }

    public void setWindow(@Nullable Duration window) {
      this.window = window;
    }
  }

  /** Enforcement of {@code @RateLimited}. */
  public static class Aspect {

    /** Whether the aspect that enforces "@RateLimited" is enabled. */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** The in-memory store. */
  public static class InMemory {

    /** The most keys tracked per budget; new keys beyond it are denied until idle keys expire. */
    private long maxKeysPerBudget = 1_000_000L;

    public long getMaxKeysPerBudget() {
      return maxKeysPerBudget;
    }

    public void setMaxKeysPerBudget(long maxKeysPerBudget) {
      this.maxKeysPerBudget = maxKeysPerBudget;
    }

    /**
     * How often a background step drops idle keys (at most 100,000 examined per step) and ranks the
     * busiest keys for the endpoint's "top" list; ignored when the application defines a
     * MaintenanceScheduler bean.
     */
    private Duration maintenanceInterval = Duration.ofSeconds(1);

    public Duration getMaintenanceInterval() {
      return maintenanceInterval;
    }

    public void setMaintenanceInterval(Duration maintenanceInterval) {
      this.maintenanceInterval = maintenanceInterval;
    }
  }

  /** The Actuator endpoint. */
  public static class Endpoint {

    /** How many keys per budget the endpoint lists when the request names no "top". */
    private int top = 20;

    /** The most keys per budget a request may ask for with "top". */
    private int maxTop = 1000;

    public int getTop() {
      return top;
    }

    public void setTop(int top) {
      this.top = top;
    }

    public int getMaxTop() {
      return maxTop;
    }

    public void setMaxTop(int maxTop) {
      this.maxTop = maxTop;
    }
  }

  /** Micrometer metrics. */
  public static class Metrics {

    /** Whether decisions are recorded as Micrometer metrics. */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** Where budgets are kept. */
  public enum StoreType {
    /** In this process: each instance enforces the limits on its own. */
    MEMORY,
    /** In Redis: every instance that shares the Redis and the key prefix shares the budgets. */
    REDIS
  }
}
