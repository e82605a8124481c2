package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.MissingKey;
import io.github.llmratelimiter.gateway.ModelSource;
import io.github.llmratelimiter.gateway.RateLimitSettings;
import io.github.llmratelimiter.gateway.StoreFailure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

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
  public static final String DEFAULT_POLICY = RateLimitSettings.DEFAULT_POLICY;

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
  private String defaultPlan = RateLimitSettings.DEFAULT_PLAN;

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
   * What a decision does when the store fails (for example a distributed store is unreachable):
   * "deny" (a 503 problem response) or "allow" (the call passes unlimited).
   */
  private StoreFailure storeFailure = StoreFailure.DENY;

  /** Route-based enforcement by the web front door (Spring MVC or WebFlux). */
  private final Web web = new Web();

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

  /** The Redis store (used when "store" is redis). */
  private final Redis redis = new Redis();

  /**
   * The secret of the ids the Actuator endpoint gives API keys (HMAC-SHA-256 of the key under this
   * secret), at least 16 bytes; instances that share a store set the same secret so that their ids
   * agree. On the Redis store (with hash-keys) it also keys the hashes that name API keys in Redis,
   * so that they cannot be reversed by hashing guessed keys. Unset: a random secret per instance
   * for the ids, generated at start-up, and plain SHA-256 in Redis.
   */
  private @Nullable String keyIdSecret;

  /**
   * Returns the setting: whether rate limiting is enabled at all.
   *
   * @return the enabled setting
   */
  public boolean isEnabled() {
    return enabled;
  }

  /**
   * Sets the setting: whether rate limiting is enabled at all.
   *
   * @param enabled the new value
   */
  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * Returns the setting: how the budgets (and the levels of a hierarchy) compose: "reserve-commit" (the default: all charged or none) or "sequential" (the window first, a burst or model-token deny keeps its window slot).
   *
   * @return the composition setting
   */
  public Composition getComposition() {
    return composition;
  }

  /**
   * Sets the setting: how the budgets (and the levels of a hierarchy) compose: "reserve-commit" (the default: all charged or none) or "sequential" (the window first, a burst or model-token deny keeps its window slot).
   *
   * @param composition the new value
   */
  public void setComposition(Composition composition) {
    this.composition = composition;
  }

  /**
   * Returns the setting: the policy applied where none is named (a route or an annotation without a policy).
   *
   * @return the defaultPolicy setting
   */
  public String getDefaultPolicy() {
    return defaultPolicy;
  }

  /**
   * Sets the setting: the policy applied where none is named (a route or an annotation without a policy).
   *
   * @param defaultPolicy the new value
   */
  public void setDefaultPolicy(String defaultPolicy) {
    this.defaultPolicy = defaultPolicy;
  }

  /**
   * Returns the setting: requests-per-window limit of the default policy, inherited by every named policy.
   *
   * @return the rpm setting
   */
  public Rpm getRpm() {
    return rpm;
  }

  /**
   * Returns the setting: token bucket of the default policy, inherited by every named policy; unset means no bucket.
   *
   * @return the burst setting
   */
  public Burst getBurst() {
    return burst;
  }

  /**
   * Returns the setting: model tokens per window (TPM) of the default policy, inherited by every named policy, and how a request's model tokens are estimated before the call.
   *
   * @return the tpm setting
   */
  public Tpm getTpm() {
    return tpm;
  }

  /**
   * Returns the setting: what the default policy's budgets are counted per.
   *
   * @return the scope setting
   */
  public KeyScope getScope() {
    return scope;
  }

  /**
   * Sets the setting: what the default policy's budgets are counted per.
   *
   * @param scope the new value
   */
  public void setScope(KeyScope scope) {
    this.scope = scope;
  }

  /**
   * Returns the setting: per-model overrides of the default policy, by model name (for example "gpt-4o").
   *
   * @return the models setting
   */
  public Map<String, Limits> getModels() {
    return models;
  }

  /**
   * Sets the setting: per-model overrides of the default policy, by model name (for example "gpt-4o").
   *
   * @param models the new value
   */
  public void setModels(Map<String, Limits> models) {
    this.models = models;
  }

  /**
   * Returns the setting: named policies, by name; each overrides the top-level limits it sets.
   *
   * @return the policies setting
   */
  public Map<String, Policy> getPolicies() {
    return policies;
  }

  /**
   * Sets the setting: named policies, by name; each overrides the top-level limits it sets.
   *
   * @param policies the new value
   */
  public void setPolicies(Map<String, Policy> policies) {
    this.policies = policies;
  }

  /**
   * Returns the setting: the plan of an API key that has none assigned.
   *
   * @return the default plan's name
   */
  public String getDefaultPlan() {
    return defaultPlan;
  }

  /**
   * Sets the setting: the plan of an API key that has none assigned.
   *
   * @param defaultPlan the new value
   */
  public void setDefaultPlan(String defaultPlan) {
    this.defaultPlan = defaultPlan;
  }

  /**
   * Returns the setting: plans, by name.
   *
   * @return the plans
   */
  public Map<String, Plan> getPlans() {
    return plans;
  }

  /**
   * Sets the setting: plans, by name.
   *
   * @param plans the new value
   */
  public void setPlans(Map<String, Plan> plans) {
    this.plans = plans;
  }

  /**
   * Returns the setting: the longest an instance uses a plan it read before reading it again.
   *
   * @return the refresh interval
   */
  public Duration getPlanRefresh() {
    return planRefresh;
  }

  /**
   * Sets the setting: the longest an instance uses a plan it read before reading it again.
   *
   * @param planRefresh the new value
   */
  public void setPlanRefresh(Duration planRefresh) {
    this.planRefresh = planRefresh;
  }

  /**
   * Returns the setting: the most API keys whose plans an instance caches.
   *
   * @return the most keys
   */
  public int getPlanCacheMaxKeys() {
    return planCacheMaxKeys;
  }

  /**
   * Sets the setting: the most API keys whose plans an instance caches.
   *
   * @param planCacheMaxKeys the new value
   */
  public void setPlanCacheMaxKeys(int planCacheMaxKeys) {
    this.planCacheMaxKeys = planCacheMaxKeys;
  }

  /**
   * Returns the setting: what happens to a request without an API key: "reject" (a 401 problem response) or "anonymous" (all such requests share the budget of the key "anonymous-key" names, "anonymous" by default).
   *
   * @return the missingKey setting
   */
  public MissingKey getMissingKey() {
    return missingKey;
  }

  /**
   * Sets the setting: what happens to a request without an API key: "reject" (a 401 problem response) or "anonymous" (all such requests share the budget of the key "anonymous-key" names, "anonymous" by default).
   *
   * @param missingKey the new value
   */
  public void setMissingKey(MissingKey missingKey) {
    this.missingKey = missingKey;
  }

  /**
   * Returns the setting: the key that requests without an API key share when "missing-key" is anonymous.
   *
   * @return the anonymousKey setting
   */
  public String getAnonymousKey() {
    return anonymousKey;
  }

  /**
   * Sets the setting: the key that requests without an API key share when "missing-key" is anonymous.
   *
   * @param anonymousKey the new value
   */
  public void setAnonymousKey(String anonymousKey) {
    this.anonymousKey = anonymousKey;
  }

  /**
   * Returns the setting: what a decision does when the store fails (for example a distributed store is unreachable): "deny" (a 503 problem response) or "allow" (the call passes unlimited).
   *
   * @return the storeFailure setting
   */
  public StoreFailure getStoreFailure() {
    return storeFailure;
  }

  /**
   * Sets the setting: what a decision does when the store fails (for example a distributed store is unreachable): "deny" (a 503 problem response) or "allow" (the call passes unlimited).
   *
   * @param storeFailure the new value
   */
  public void setStoreFailure(StoreFailure storeFailure) {
    this.storeFailure = storeFailure;
  }

  /**
   * Returns the setting: route-based enforcement by the web front door (Spring MVC or WebFlux).
   *
   * @return the web setting
   */
  public Web getWeb() {
    return web;
  }

  /**
   * Returns the setting: enforcement of "@RateLimited" on Spring bean methods.
   *
   * @return the aspect setting
   */
  public Aspect getAspect() {
    return aspect;
  }

  /**
   * Returns the setting: the in-memory store (used when no other RateLimitStore bean is defined).
   *
   * @return the inMemory setting
   */
  public InMemory getInMemory() {
    return inMemory;
  }

  /**
   * Returns the setting: the Actuator endpoint "ratelimiter".
   *
   * @return the endpoint setting
   */
  public Endpoint getEndpoint() {
    return endpoint;
  }

  /**
   * Returns the setting: micrometer metrics.
   *
   * @return the metrics setting
   */
  public Metrics getMetrics() {
    return metrics;
  }

  /**
   * Returns the setting: where budgets are kept, "memory" or "redis".
   *
   * @return the store setting
   */
  public StoreType getStore() {
    return store;
  }

  /**
   * Sets the setting: where budgets are kept, "memory" or "redis".
   *
   * @param store the new value
   */
  public void setStore(StoreType store) {
    this.store = store;
  }

  /**
   * Returns the setting: the Redis store (used when "store" is redis).
   *
   * @return the redis setting
   */
  public Redis getRedis() {
    return redis;
  }

  /**
   * Returns the setting: the secret of the ids the Actuator endpoint gives API keys.
   *
   * @return the keyIdSecret setting, or null when unset
   */
  public @Nullable String getKeyIdSecret() {
    return keyIdSecret;
  }

  /**
   * Sets the setting: the secret of the ids the Actuator endpoint gives API keys.
   *
   * @param keyIdSecret the new value
   */
  public void setKeyIdSecret(@Nullable String keyIdSecret) {
    this.keyIdSecret = keyIdSecret;
  }

  /** The top-level requests-per-window limit, with defaults. */
  public static class Rpm {

    /** Requests admitted per window and key. */
    private long limit = 60;

    /** The window's length. */
    private Duration window = Duration.ofMinutes(1);

    /**
     * Returns the setting: requests admitted per window and key.
     *
     * @return the limit setting
     */
    public long getLimit() {
      return limit;
    }

    /**
     * Sets the setting: requests admitted per window and key.
     *
     * @param limit the new value
     */
    public void setLimit(long limit) {
      this.limit = limit;
    }

    /**
     * Returns the setting: the window's length.
     *
     * @return the window setting
     */
    public Duration getWindow() {
      return window;
    }

    /**
     * Sets the setting: the window's length.
     *
     * @param window the new value
     */
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

    /**
     * Returns the setting: tokens the bucket holds when full (the largest burst); unset means no bucket.
     *
     * @return the capacity setting
     */
    public @Nullable Double getCapacity() {
      return capacity;
    }

    /**
     * Sets the setting: tokens the bucket holds when full (the largest burst); unset means no bucket.
     *
     * @param capacity the new value
     */
    public void setCapacity(@Nullable Double capacity) {
      this.capacity = capacity;
    }

    /**
     * Returns the setting: tokens regained per second; required with a capacity; 0 means the bucket never refills.
     *
     * @return the refillPerSecond setting
     */
    public @Nullable Double getRefillPerSecond() {
      return refillPerSecond;
    }

    /**
     * Sets the setting: tokens regained per second; required with a capacity; 0 means the bucket never refills.
     *
     * @param refillPerSecond the new value
     */
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

    /**
     * Returns the setting: requests admitted per window and key; inherited when unset.
     *
     * @return the limit setting
     */
    public @Nullable Long getLimit() {
      return limit;
    }

    /**
     * Sets the setting: requests admitted per window and key; inherited when unset.
     *
     * @param limit the new value
     */
    public void setLimit(@Nullable Long limit) {
      this.limit = limit;
    }

    /**
     * Returns the setting: the window's length; inherited when unset.
     *
     * @return the window setting
     */
    public @Nullable Duration getWindow() {
      return window;
    }

    /**
     * Sets the setting: the window's length; inherited when unset.
     *
     * @param window the new value
     */
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
     * Returns the setting: requests-per-window override.
     *
     * @return the rpm setting
     */
    public RpmOverride getRpm() {
      return rpm;
    }

    /**
     * Returns the setting: token bucket override.
     *
     * @return the burst setting
     */
    public Burst getBurst() {
      return burst;
    }

    /**
     * Returns the setting: model tokens per window (TPM) override.
     *
     * @return the tpm setting
     */
    public TpmOverride getTpm() {
      return tpm;
    }

    /**
     * Returns the setting: the most calls of an API key in flight at once.
     *
     * @return the concurrency setting
     */
    public Concurrency getConcurrency() {
      return concurrency;
    }
  }

  /** A limit on the calls of an API key in flight at once. */
  public static class Concurrency {

    /** The most calls of an API key in flight at once; inherited when unset (no limit by default). */
    private @Nullable Long limit;

    /**
     * The longest a call holds its slot: past it the slot is free even if the call never ended (an
     * instance that crashed never holds a tenant's slots for longer); inherited when unset, else 10m.
     */
    private @Nullable Duration leaseTimeout;

    /**
     * Returns the setting: the most calls of an API key in flight at once.
     *
     * @return the limit setting
     */
    public @Nullable Long getLimit() {
      return limit;
    }

    /**
     * Sets the setting: the most calls of an API key in flight at once.
     *
     * @param limit the new value
     */
    public void setLimit(@Nullable Long limit) {
      this.limit = limit;
    }

    /**
     * Returns the setting: the longest a call holds its slot.
     *
     * @return the lease-timeout setting
     */
    public @Nullable Duration getLeaseTimeout() {
      return leaseTimeout;
    }

    /**
     * Sets the setting: the longest a call holds its slot.
     *
     * @param leaseTimeout the new value
     */
    public void setLeaseTimeout(@Nullable Duration leaseTimeout) {
      this.leaseTimeout = leaseTimeout;
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
     * Returns the setting: overrides by policy name.
     *
     * @return the overrides
     */
    public Map<String, PlanPolicy> getPolicies() {
      return policies;
    }

    /**
     * Sets the setting: overrides by policy name.
     *
     * @param policies the new value
     */
    public void setPolicies(Map<String, PlanPolicy> policies) {
      this.policies = policies;
    }
  }

  /** A plan's overrides of one policy: its own limits and its models'. */
  public static class PlanPolicy extends Limits {

    /** Overrides of the models the policy configures, by model name. */
    private Map<String, Limits> models = new LinkedHashMap<>();

    /**
     * Returns the setting: overrides of the models the policy configures.
     *
     * @return the overrides
     */
    public Map<String, Limits> getModels() {
      return models;
    }

    /**
     * Sets the setting: overrides of the models the policy configures.
     *
     * @param models the new value
     */
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
     * Returns the setting: what this policy's budgets are counted per; inherits the top-level scope when unset.
     *
     * @return the scope setting
     */
    public @Nullable KeyScope getScope() {
      return scope;
    }

    /**
     * Sets the setting: what this policy's budgets are counted per; inherits the top-level scope when unset.
     *
     * @param scope the new value
     */
    public void setScope(@Nullable KeyScope scope) {
      this.scope = scope;
    }

    /**
     * Returns the setting: per-model overrides of this policy, by model name.
     *
     * @return the models setting
     */
    public Map<String, Limits> getModels() {
      return models;
    }

    /**
     * Sets the setting: per-model overrides of this policy, by model name.
     *
     * @param models the new value
     */
    public void setModels(Map<String, Limits> models) {
      this.models = models;
    }

    /**
     * Returns the setting: the policy one level above this one in a hierarchy (for example a per-key budget above a per-key-and-model one); both are decided in one atomic store call.
     *
     * @return the parent setting
     */
    public @Nullable String getParent() {
      return parent;
    }

    /**
     * Sets the setting: the policy one level above this one in a hierarchy (for example a per-key budget above a per-key-and-model one); both are decided in one atomic store call.
     *
     * @param parent the new value
     */
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

    /**
     * Returns the setting: model tokens admitted per window and key; unset means no TPM budget.
     *
     * @return the limit setting
     */
    public @Nullable Long getLimit() {
      return limit;
    }

    /**
     * Sets the setting: model tokens admitted per window and key; unset means no TPM budget.
     *
     * @param limit the new value
     */
    public void setLimit(@Nullable Long limit) {
      this.limit = limit;
    }

    /**
     * Returns the setting: the model-token window's length.
     *
     * @return the window setting
     */
    public Duration getWindow() {
      return window;
    }

    /**
     * Sets the setting: the model-token window's length.
     *
     * @param window the new value
     */
    public void setWindow(Duration window) {
      this.window = window;
    }

    /**
     * Returns the setting: UTF-8 bytes of prompt text counted as one model token by the default estimator.
     *
     * @return the bytesPerToken setting
     */
    public int getBytesPerToken() {
      return bytesPerToken;
    }

    /**
     * Sets the setting: UTF-8 bytes of prompt text counted as one model token by the default estimator.
     *
     * @param bytesPerToken the new value
     */
    public void setBytesPerToken(int bytesPerToken) {
      this.bytesPerToken = bytesPerToken;
    }

    /**
     * Returns the setting: model tokens the default estimator adds per chat message.
     *
     * @return the tokensPerMessage setting
     */
    public int getTokensPerMessage() {
      return tokensPerMessage;
    }

    /**
     * Sets the setting: model tokens the default estimator adds per chat message.
     *
     * @param tokensPerMessage the new value
     */
    public void setTokensPerMessage(int tokensPerMessage) {
      this.tokensPerMessage = tokensPerMessage;
    }

    /**
     * Returns the setting: model tokens the default estimator adds per request.
     *
     * @return the tokensPerRequest setting
     */
    public int getTokensPerRequest() {
      return tokensPerRequest;
    }

    /**
     * Sets the setting: model tokens the default estimator adds per request.
     *
     * @param tokensPerRequest the new value
     */
    public void setTokensPerRequest(int tokensPerRequest) {
      this.tokensPerRequest = tokensPerRequest;
    }

    /**
     * Returns the setting: completion tokens the default estimator assumes when a request sets no maximum.
     *
     * @return the defaultCompletionTokens setting
     */
    public long getDefaultCompletionTokens() {
      return defaultCompletionTokens;
    }

    /**
     * Sets the setting: completion tokens the default estimator assumes when a request sets no maximum.
     *
     * @param defaultCompletionTokens the new value
     */
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

    /**
     * Returns the setting: model tokens admitted per window and key; inherited when unset.
     *
     * @return the limit setting
     */
    public @Nullable Long getLimit() {
      return limit;
    }

    /**
     * Sets the setting: model tokens admitted per window and key; inherited when unset.
     *
     * @param limit the new value
     */
    public void setLimit(@Nullable Long limit) {
      this.limit = limit;
    }

    /**
     * Returns the setting: the model-token window's length; inherited when unset.
     *
     * @return the window setting
     */
    public @Nullable Duration getWindow() {
      return window;
    }

    /**
     * Sets the setting: the model-token window's length; inherited when unset.
     *
     * @param window the new value
     */
    public void setWindow(@Nullable Duration window) {
      this.window = window;
    }
  }

  /** Route-based enforcement. */
  public static class Web {

    /**
     * Whether the web front door (the Spring MVC interceptor and filters, or the WebFlux filter) and
     * its problem responses are enabled.
     */
    private boolean enabled = true;

    /** Routes the web front door limits; the first route whose patterns match a request applies. */
    private List<Route> routes = new ArrayList<>();

    /**
     * Whether the limiter reads request bodies: a JSON body's "model" field and its model-token
     * estimate, and the size of a body sent without a Content-Length. With false, a route's
     * model-source defaults to "query" and may not be "body" or "body-then-query".
     */
    private boolean modelFromBody = true;

    /**
     * The largest request body a limited request may carry; a larger one gets a 413 problem and is
     * not charged, whether its Content-Length declares it or it streams past the limit. 4MB holds a
     * text prompt that fills a context window of about a million tokens (about 4 bytes a token);
     * larger bodies are mostly inline images or audio, for which raise it. A body sent without a
     * Content-Length is buffered up to this size before the call is charged.
     */
    private DataSize maxBody = DataSize.ofMegabytes(4);

    /**
     * The largest JSON request body the limiter parses for its "model" field, its model-token
     * estimate and its checks (max_tokens, n); unset means max-body, and it may not exceed max-body.
     * On a route whose model-source reads the body, a larger JSON body gets a 413 problem: its
     * budget cannot be known.
     */
    private @Nullable DataSize maxBodyPeek;

    /** The "type" URI of the 429 problem response. */
    private String problemType = "urn:llmratelimiter:problem:rate-limited";

    /**
     * Returns the setting: whether the web front door and its problem responses are enabled.
     *
     * @return the enabled setting
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets the setting: whether the web front door and its problem responses are enabled.
     *
     * @param enabled the new value
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * Returns the setting: routes the web front door limits; the first route whose patterns match a
     * request applies.
     *
     * @return the routes setting
     */
    public List<Route> getRoutes() {
      return routes;
    }

    /**
     * Sets the setting: routes the web front door limits; the first route whose patterns match a
     * request applies.
     *
     * @param routes the new value
     */
    public void setRoutes(List<Route> routes) {
      this.routes = routes;
    }

    /**
     * Returns the setting: whether the limiter reads request bodies (the model, the estimate, the
     * size of a body without a Content-Length).
     *
     * @return the modelFromBody setting
     */
    public boolean isModelFromBody() {
      return modelFromBody;
    }

    /**
     * Sets the setting: whether the limiter reads request bodies (the model, the estimate, the size
     * of a body without a Content-Length).
     *
     * @param modelFromBody the new value
     */
    public void setModelFromBody(boolean modelFromBody) {
      this.modelFromBody = modelFromBody;
    }

    /**
     * Returns the setting: the largest request body a limited request may carry (a larger one gets
     * a 413 problem).
     *
     * @return the maxBody setting
     */
    public DataSize getMaxBody() {
      return maxBody;
    }

    /**
     * Sets the setting: the largest request body a limited request may carry (a larger one gets a
     * 413 problem).
     *
     * @param maxBody the new value
     */
    public void setMaxBody(DataSize maxBody) {
      this.maxBody = maxBody;
    }

    /**
     * Returns the setting: the largest JSON request body the limiter parses; unset means max-body.
     *
     * @return the maxBodyPeek setting, or null when unset
     */
    public @Nullable DataSize getMaxBodyPeek() {
      return maxBodyPeek;
    }

    /**
     * Sets the setting: the largest JSON request body the limiter parses; unset means max-body.
     *
     * @param maxBodyPeek the new value, or null for max-body
     */
    public void setMaxBodyPeek(@Nullable DataSize maxBodyPeek) {
      this.maxBodyPeek = maxBodyPeek;
    }

    /**
     * Returns the setting: the "type" URI of the 429 problem response.
     *
     * @return the problemType setting
     */
    public String getProblemType() {
      return problemType;
    }

    /**
     * Sets the setting: the "type" URI of the 429 problem response.
     *
     * @param problemType the new value
     */
    public void setProblemType(String problemType) {
      this.problemType = problemType;
    }
  }

  /**
   * One route of the web front door: path patterns (and HTTP methods), the policy that limits
   * them, and who a request is charged to.
   */
  public static class Route {

    /** Path patterns the route covers (Spring PathPattern syntax, for example "/v1/**"). */
    private List<String> include = new ArrayList<>();

    /**
     * HTTP methods the route covers, for example POST; empty covers every method. A request of
     * another method is matched against the next routes.
     */
    private List<String> methods = new ArrayList<>();

    /**
     * Who a request is charged to: "api-key" (the API key it carries; the default), "principal"
     * (the authenticated user's name, as "principal:<name>") or "client-ip" (the connection's
     * remote address, as "ip:<address>", an IPv6 client as its /64 network, rewritten from
     * X-Forwarded-For or Forwarded only when server.forward-headers-strategy is native or
     * framework). A request without one follows missing-key.
     */
    private @Nullable KeySource key;

    /**
     * A SpEL expression for who a request is charged to, instead of "key": evaluated on the
     * request (header('X-Tenant'), method, path, clientIp, principal), with #request the native
     * request (HttpServletRequest, or ServerHttpRequest in WebFlux) and @bean references. Parsed at
     * start-up; a request for which it gives null or blank follows missing-key.
     */
    private @Nullable String keyExpression;

    /** Path patterns excluded from the route even when an include pattern matches. */
    private List<String> exclude = new ArrayList<>();

    /** The policy applied to the route; the default policy when unset. */
    private @Nullable String policy;

    /**
     * Where the route's model is read: "body-then-query" (the JSON body's "model", or a form
     * body's model field; the "model" query parameter only when the body names none), "body"
     * (the body only), "query" (the query string only) or "none" (no model). Unset means
     * body-then-query, or query when model-from-body is false. Choose the source the handler
     * reads the model from: the budget charged is then the budget of the model served.
     */
    private @Nullable ModelSource modelSource;

    /**
     * Returns the setting: path patterns the route covers (Spring PathPattern syntax, for example "/v1/**").
     *
     * @return the include setting
     */
    public List<String> getInclude() {
      return include;
    }

    /**
     * Sets the setting: path patterns the route covers (Spring PathPattern syntax, for example "/v1/**").
     *
     * @param include the new value
     */
    public void setInclude(List<String> include) {
      this.include = include;
    }

    /**
     * Returns the setting: path patterns excluded from the route even when an include pattern matches.
     *
     * @return the exclude setting
     */
    public List<String> getExclude() {
      return exclude;
    }

    /**
     * Sets the setting: path patterns excluded from the route even when an include pattern matches.
     *
     * @param exclude the new value
     */
    public void setExclude(List<String> exclude) {
      this.exclude = exclude;
    }

    /**
     * Returns the setting: the policy applied to the route; the default policy when unset.
     *
     * @return the policy setting
     */
    public @Nullable String getPolicy() {
      return policy;
    }

    /**
     * Sets the setting: the policy applied to the route; the default policy when unset.
     *
     * @param policy the new value
     */
    public void setPolicy(@Nullable String policy) {
      this.policy = policy;
    }

    /**
     * Returns the setting: where the route's model is read; unset means body-then-query (query
     * when model-from-body is false).
     *
     * @return the modelSource setting, or null when unset
     */
    public @Nullable ModelSource getModelSource() {
      return modelSource;
    }

    /**
     * Sets the setting: where the route's model is read; unset means body-then-query (query when
     * model-from-body is false).
     *
     * @param modelSource the new value, or null for the default
     */
    public void setModelSource(@Nullable ModelSource modelSource) {
      this.modelSource = modelSource;
    }

    /**
     * Returns the setting: HTTP methods the route covers; empty covers every method.
     *
     * @return the methods setting
     */
    public List<String> getMethods() {
      return methods;
    }

    /**
     * Sets the setting: HTTP methods the route covers; empty covers every method.
     *
     * @param methods the new value
     */
    public void setMethods(List<String> methods) {
      this.methods = methods;
    }

    /**
     * Returns the setting: who a request is charged to; unset means api-key.
     *
     * @return the key setting, or null when unset
     */
    public @Nullable KeySource getKey() {
      return key;
    }

    /**
     * Sets the setting: who a request is charged to; unset means api-key.
     *
     * @param key the new value, or null for the default
     */
    public void setKey(@Nullable KeySource key) {
      this.key = key;
    }

    /**
     * Returns the setting: a SpEL expression for who a request is charged to, instead of "key".
     *
     * @return the keyExpression setting, or null when unset
     */
    public @Nullable String getKeyExpression() {
      return keyExpression;
    }

    /**
     * Sets the setting: a SpEL expression for who a request is charged to, instead of "key".
     *
     * @param keyExpression the new value, or null for none
     */
    public void setKeyExpression(@Nullable String keyExpression) {
      this.keyExpression = keyExpression;
    }
  }

  /** Enforcement of {@code @RateLimited}. */
  public static class Aspect {

    /** Whether the aspect that enforces "@RateLimited" is enabled. */
    private boolean enabled = true;

    /**
     * Returns the setting: whether the aspect that enforces "@RateLimited" is enabled.
     *
     * @return the enabled setting
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets the setting: whether the aspect that enforces "@RateLimited" is enabled.
     *
     * @param enabled the new value
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** The in-memory store. */
  public static class InMemory {

    /** The most keys tracked per budget; new keys beyond it are denied until idle keys expire. */
    private long maxKeysPerBudget = 1_000_000L;

    /**
     * Returns the setting: the most keys tracked per budget; new keys beyond it are denied until idle keys expire.
     *
     * @return the maxKeysPerBudget setting
     */
    public long getMaxKeysPerBudget() {
      return maxKeysPerBudget;
    }

    /**
     * Sets the setting: the most keys tracked per budget; new keys beyond it are denied until idle keys expire.
     *
     * @param maxKeysPerBudget the new value
     */
    public void setMaxKeysPerBudget(long maxKeysPerBudget) {
      this.maxKeysPerBudget = maxKeysPerBudget;
    }

    /**
     * How often a background step drops idle keys (at most 100,000 examined per step) and ranks the
     * busiest keys for the endpoint's "top" list; ignored when the application defines a
     * MaintenanceScheduler bean.
     */
    private Duration maintenanceInterval = Duration.ofSeconds(1);

    /**
     * Returns the setting: how often a background step drops idle keys and ranks the busiest keys.
     *
     * @return the maintenanceInterval setting
     */
    public Duration getMaintenanceInterval() {
      return maintenanceInterval;
    }

    /**
     * Sets the setting: how often a background step drops idle keys and ranks the busiest keys.
     *
     * @param maintenanceInterval the new value
     */
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

    /**
     * Returns the setting: how many keys per budget the endpoint lists when the request names no "top".
     *
     * @return the top setting
     */
    public int getTop() {
      return top;
    }

    /**
     * Sets the setting: how many keys per budget the endpoint lists when the request names no "top".
     *
     * @param top the new value
     */
    public void setTop(int top) {
      this.top = top;
    }

    /**
     * Returns the setting: the most keys per budget a request may ask for with "top".
     *
     * @return the maxTop setting
     */
    public int getMaxTop() {
      return maxTop;
    }

    /**
     * Sets the setting: the most keys per budget a request may ask for with "top".
     *
     * @param maxTop the new value
     */
    public void setMaxTop(int maxTop) {
      this.maxTop = maxTop;
    }
  }

  /** Micrometer metrics. */
  public static class Metrics {

    /** Whether decisions are recorded as Micrometer metrics. */
    private boolean enabled = true;

    /**
     * Returns the setting: whether decisions are recorded as Micrometer metrics.
     *
     * @return the enabled setting
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets the setting: whether decisions are recorded as Micrometer metrics.
     *
     * @param enabled the new value
     */
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

  /** The Redis store; its connection is the application's spring.data.redis.* one. */
  public static class Redis {

    /** The prefix of every Redis key; instances that share it share their budgets. */
    private String keyPrefix = "rl";

    /**
     * How long Redis may answer nothing while a request waits for it before the failure policy
     * answers that request: a request queued behind a burst keeps waiting while Redis answers the
     * requests before it (up to max-wait). A health check's PING waits at most the shorter of
     * this and 300ms.
     */
    private Duration commandTimeout = Duration.ofSeconds(1);

    /**
     * The longest a request waits for Redis in all, however busy Redis is; a call that Redis runs
     * after this charges nothing there. Unset: 5s, or the command timeout if that is longer.
     */
    private @Nullable Duration maxWait;

    /**
     * How often this instance marks itself live in Redis; under local-fallback each instance takes
     * its share of every limit from the count of live instances.
     */
    private Duration heartbeatInterval = Duration.ofSeconds(1);

    /** When Redis counts as unavailable, so that the failure policy answers every request. */
    private final CircuitBreaker circuitBreaker = new CircuitBreaker();

    /**
     * What answers while Redis does not: "fail-open" (admit every call), "fail-closed" (deny with
     * a 503) or "local-fallback" (an in-memory store in this instance decides).
     */
    private FailurePolicy failurePolicy = FailurePolicy.LOCAL_FALLBACK;

    /**
     * How long the failure policy answers every request once the circuit breaker has opened,
     * before probe requests ask Redis again.
     */
    private Duration retryInterval = Duration.ofSeconds(1);

    /**
     * Whether API keys and other limiter keys are hashed (SHA-256) in Redis key names, so that
     * they never appear there in clear; false keeps them readable.
     */
    private boolean hashKeys = true;

    /**
     * Returns the setting: the prefix of every Redis key; instances that share it share their budgets.
     *
     * @return the keyPrefix setting
     */
    public String getKeyPrefix() {
      return keyPrefix;
    }

    /**
     * Sets the setting: the prefix of every Redis key; instances that share it share their budgets.
     *
     * @param keyPrefix the new value
     */
    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }

    /**
     * Returns the setting: how long Redis may answer nothing while a request waits.
     *
     * @return the commandTimeout setting
     */
    public Duration getCommandTimeout() {
      return commandTimeout;
    }

    /**
     * Sets the setting: how long Redis may answer nothing while a request waits.
     *
     * @param commandTimeout the new value
     */
    public void setCommandTimeout(Duration commandTimeout) {
      this.commandTimeout = commandTimeout;
    }

    /**
     * Returns the setting: the longest a request waits for Redis in all.
     *
     * @return the maxWait setting
     */
    public @Nullable Duration getMaxWait() {
      return maxWait;
    }

    /**
     * Sets the setting: the longest a request waits for Redis in all.
     *
     * @param maxWait the new value
     */
    public void setMaxWait(@Nullable Duration maxWait) {
      this.maxWait = maxWait;
    }

    /**
     * Returns the setting: how often this instance marks itself live in Redis.
     *
     * @return the heartbeatInterval setting
     */
    public Duration getHeartbeatInterval() {
      return heartbeatInterval;
    }

    /**
     * Sets the setting: how often this instance marks itself live in Redis.
     *
     * @param heartbeatInterval the new value
     */
    public void setHeartbeatInterval(Duration heartbeatInterval) {
      this.heartbeatInterval = heartbeatInterval;
    }

    /**
     * Returns the circuit breaker's settings.
     *
     * @return the circuit breaker's settings
     */
    public CircuitBreaker getCircuitBreaker() {
      return circuitBreaker;
    }

    /**
     * Returns the setting: what answers while Redis does not.
     *
     * @return the failurePolicy setting
     */
    public FailurePolicy getFailurePolicy() {
      return failurePolicy;
    }

    /**
     * Sets the setting: what answers while Redis does not.
     *
     * @param failurePolicy the new value
     */
    public void setFailurePolicy(FailurePolicy failurePolicy) {
      this.failurePolicy = failurePolicy;
    }

    /**
     * Returns the setting: how long after a failure the policy answers before Redis is asked again.
     *
     * @return the retryInterval setting
     */
    public Duration getRetryInterval() {
      return retryInterval;
    }

    /**
     * Sets the setting: how long after a failure the policy answers before Redis is asked again.
     *
     * @param retryInterval the new value
     */
    public void setRetryInterval(Duration retryInterval) {
      this.retryInterval = retryInterval;
    }

    /**
     * Returns the setting: whether limiter keys are hashed in Redis key names.
     *
     * @return the hashKeys setting
     */
    public boolean isHashKeys() {
      return hashKeys;
    }

    /**
     * Sets the setting: whether limiter keys are hashed in Redis key names.
     *
     * @param hashKeys the new value
     */
    public void setHashKeys(boolean hashKeys) {
      this.hashKeys = hashKeys;
    }

    /** What answers while Redis does not. */
    public enum FailurePolicy {
      /** Admit every call. */
      FAIL_OPEN,
      /** Deny every call with a 503 problem response and a Retry-After of the retry interval. */
      FAIL_CLOSED,
      /** An in-memory store in this instance decides until Redis answers again. */
      LOCAL_FALLBACK
    }

    /**
     * The circuit breaker that decides when Redis counts as unavailable: it opens when at least
     * failure-rate-threshold percent of the last sliding-window-size requests failed (counted once
     * minimum-number-of-calls were made); after retry-interval, permitted-calls-in-half-open-state
     * probe requests decide whether it closes again.
     */
    public static class CircuitBreaker {

      /** The failure rate, in percent (above 0, at most 100), at which the breaker opens. */
      private float failureRateThreshold = 50;

      /** How many of the most recent requests the failure rate is taken over. */
      private int slidingWindowSize = 20;

      /** How many requests the breaker needs before it computes a failure rate. */
      private int minimumNumberOfCalls = 10;

      /** How many probe requests go to Redis after the retry interval. */
      private int permittedCallsInHalfOpenState = 3;

      /**
       * Returns the setting: the failure rate, in percent, at which the breaker opens.
       *
       * @return the failureRateThreshold setting
       */
      public float getFailureRateThreshold() {
        return failureRateThreshold;
      }

      /**
       * Sets the setting: the failure rate, in percent, at which the breaker opens.
       *
       * @param failureRateThreshold the new value
       */
      public void setFailureRateThreshold(float failureRateThreshold) {
        this.failureRateThreshold = failureRateThreshold;
      }

      /**
       * Returns the setting: how many of the most recent requests the rate is taken over.
       *
       * @return the slidingWindowSize setting
       */
      public int getSlidingWindowSize() {
        return slidingWindowSize;
      }

      /**
       * Sets the setting: how many of the most recent requests the rate is taken over.
       *
       * @param slidingWindowSize the new value
       */
      public void setSlidingWindowSize(int slidingWindowSize) {
        this.slidingWindowSize = slidingWindowSize;
      }

      /**
       * Returns the setting: how many requests the breaker needs before it computes a rate.
       *
       * @return the minimumNumberOfCalls setting
       */
      public int getMinimumNumberOfCalls() {
        return minimumNumberOfCalls;
      }

      /**
       * Sets the setting: how many requests the breaker needs before it computes a rate.
       *
       * @param minimumNumberOfCalls the new value
       */
      public void setMinimumNumberOfCalls(int minimumNumberOfCalls) {
        this.minimumNumberOfCalls = minimumNumberOfCalls;
      }

      /**
       * Returns the setting: how many probe requests go to Redis after the retry interval.
       *
       * @return the permittedCallsInHalfOpenState setting
       */
      public int getPermittedCallsInHalfOpenState() {
        return permittedCallsInHalfOpenState;
      }

      /**
       * Sets the setting: how many probe requests go to Redis after the retry interval.
       *
       * @param permittedCallsInHalfOpenState the new value
       */
      public void setPermittedCallsInHalfOpenState(int permittedCallsInHalfOpenState) {
        this.permittedCallsInHalfOpenState = permittedCallsInHalfOpenState;
      }
    }
  }
}
