package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.Composition;
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
  public static final String DEFAULT_POLICY = "default";

  /** Whether rate limiting is enabled at all. */
  private boolean enabled = true;

  /**
   * How the window and the bucket (and the levels of a hierarchy) compose: "sequential" (the
   * window first, a burst deny keeps its window slot) or "reserve-commit" (all levels charged
   * or none).
   */
  private Composition composition = Composition.SEQUENTIAL;

  /** The policy applied where none is named (a route or an annotation without a policy). */
  private String defaultPolicy = DEFAULT_POLICY;

  /** Requests-per-window limit of the default policy, inherited by every named policy. */
  private final Rpm rpm = new Rpm();

  /** Token bucket of the default policy, inherited by every named policy; unset means no bucket. */
  private final Burst burst = new Burst();

  /** What the default policy's budgets are counted per. */
  private KeyScope scope = KeyScope.API_KEY;

  /** Per-model overrides of the default policy, by model name (for example "gpt-4o"). */
  private Map<String, Limits> models = new LinkedHashMap<>();

  /** Named policies, by name; each overrides the top-level limits it sets. */
  private Map<String, Policy> policies = new LinkedHashMap<>();

  /**
   * What happens to a request without an API key: "reject" (a 401 problem response) or
   * "anonymous" (all such requests share the budget of "anonymous-key").
   */
  private MissingKey missingKey = MissingKey.REJECT;

  /** The key that requests without an API key share when "missing-key" is anonymous. */
  private String anonymousKey = "anonymous";

  /**
   * What a decision does when the store fails (for example a distributed store is unreachable):
   * "deny" (a 503 problem response) or "allow" (the call passes unlimited).
   */
  private StoreFailure storeFailure = StoreFailure.DENY;

  /** Route-based enforcement by the Spring MVC interceptor. */
  private final Web web = new Web();

  /** Enforcement of "@RateLimited" by the AspectJ aspect. */
  private final Aspect aspect = new Aspect();

  /** The in-memory store (used when no other RateLimitStore bean is defined). */
  private final InMemory inMemory = new InMemory();

  /** The Actuator endpoint "ratelimiter". */
  private final Endpoint endpoint = new Endpoint();

  /** Micrometer metrics. */
  private final Metrics metrics = new Metrics();

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

  public Web getWeb() {
    return web;
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

  /** What a request without an API key gets. */
  public enum MissingKey {
    /** A 401 problem response; the request is not served. */
    REJECT,
    /** The request is limited on the shared budget of the anonymous key. */
    ANONYMOUS
  }

  /** What a decision does when the store fails. */
  public enum StoreFailure {
    /** Fail closed: a 503 problem response. */
    DENY,
    /** Fail open: the call passes without a limit. */
    ALLOW
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

    public RpmOverride getRpm() {
      return rpm;
    }

    public Burst getBurst() {
      return burst;
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

  /** Route-based enforcement. */
  public static class Web {

    /** Whether the Spring MVC interceptor and the 429/401 problem responses are enabled. */
    private boolean enabled = true;

    /** Routes the interceptor limits; the first route whose patterns match a request applies. */
    private List<Route> routes = new ArrayList<>();

    /** Whether the model is read from the "model" field of a JSON request body. */
    private boolean modelFromBody = true;

    /** The largest JSON request body read for its "model" field; larger bodies are not read. */
    private DataSize maxBodyPeek = DataSize.ofKilobytes(256);

    /** The "type" URI of the 429 problem response. */
    private String problemType = "urn:llmratelimiter:problem:rate-limited";

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public List<Route> getRoutes() {
      return routes;
    }

    public void setRoutes(List<Route> routes) {
      this.routes = routes;
    }

    public boolean isModelFromBody() {
      return modelFromBody;
    }

    public void setModelFromBody(boolean modelFromBody) {
      this.modelFromBody = modelFromBody;
    }

    public DataSize getMaxBodyPeek() {
      return maxBodyPeek;
    }

    public void setMaxBodyPeek(DataSize maxBodyPeek) {
      this.maxBodyPeek = maxBodyPeek;
    }

    public String getProblemType() {
      return problemType;
    }

    public void setProblemType(String problemType) {
      this.problemType = problemType;
    }
  }

  /** One route of the interceptor: path patterns and the policy that limits them. */
  public static class Route {

    /** Path patterns the route covers (Spring PathPattern syntax, for example "/v1/**"). */
    private List<String> include = new ArrayList<>();

    /** Path patterns excluded from the route even when an include pattern matches. */
    private List<String> exclude = new ArrayList<>();

    /** The policy applied to the route; the default policy when unset. */
    private @Nullable String policy;

    public List<String> getInclude() {
      return include;
    }

    public void setInclude(List<String> include) {
      this.include = include;
    }

    public List<String> getExclude() {
      return exclude;
    }

    public void setExclude(List<String> exclude) {
      this.exclude = exclude;
    }

    public @Nullable String getPolicy() {
      return policy;
    }

    public void setPolicy(@Nullable String policy) {
      this.policy = policy;
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
}
