package io.github.llmratelimiter.autoconfigure.endpoint;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaSpend;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.internal.KeyIds;
import io.github.llmratelimiter.gateway.internal.KeyMasking;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPlanResolver;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamStatus;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * The Actuator endpoint {@code ratelimiter}.
 *
 * <ul>
 *   <li>{@code GET /actuator/ratelimiter?top=N}: the effective configuration and, per budget, the
 *       number of tracked keys and the N most used (default {@code ratelimiter.endpoint.top},
 *       at most {@code ratelimiter.endpoint.max-top}); per quota, the N keys that spent the most of
 *       it in its current period;
 *       and per upstream ({@code ratelimiter.upstreams}) its status on the store ({@link
 *       UpstreamStatus}: the limits in force, what its window and model tokens admit now, the
 *       calls in flight, what the provider's last report left and how long it stays closed), or
 *       an {@code error} when the store cannot answer, and the calls waiting for it ({@code
 *       waiting}: on a store that keeps the upstreams' shared order, the calls waiting on every
 *       instance; else on this one);
 *   <li>{@code GET /actuator/ratelimiter/{key}?model=M}: one API key's state in every budget (the
 *       per-key-and-model entries of models without an override are found among the {@code
 *       max-top} most used of their budget; {@code model} names one to look up directly);
 *   <li>{@code DELETE /actuator/ratelimiter/{key}?model=M}: resets that key's budgets; available
 *       only when the application grants {@code management.endpoint.ratelimiter.access=unrestricted}
 *       (the default access is read-only);
 *   <li>{@code POST /actuator/ratelimiter/{key}} with {@code {"plan":"pro"}} assigns a plan, and
 *       {@code {"plan":null}} clears the assignment; a write operation under the same access rule
 *       as the reset.
 * </ul>
 *
 * <p>One key's report shows its {@code plan} (assigned, or the default plan), the effective
 * limits of every budget under it, and where each quota of its levels stands: used, limit and
 * remaining (cost in micro-units, and as an exact decimal of the currency in the {@code *Amount}
 * fields), the period's start and end (ISO-8601 instants; the end is when the quota resets), and
 * whether the quota is enforced or in shadow mode.
 *
 * <p>The {@code {key}} is the API key in clear or its {@code id} as this endpoint shows it; keys are
 * only ever shown masked ({@code ****} and the last 4 characters) with that id, a keyed hash ({@link
 * KeyIds}: HMAC-SHA-256 under {@code ratelimiter.key-id-secret}) that reveals nothing of the key.
 * An id names a key among the most used ones ({@code max-top} per budget) of this instance's store.
 *
 * <p>A store that keeps only a hash of each key (the Redis store, by default) lists its keys by that
 * hash ({@code #} and 22 base64url characters): the most used keys then show that hash as {@code
 * key}, without {@code id} or model, since the key in clear is nowhere to be read. Looking up or
 * resetting a key by the API key in clear works as with any store.
 *
 * <p>Key states are read and reset through the store's {@linkplain RateLimitStore#administration()
 * administration}: with a store that offers none, the report lists no budget, a key shows its plan
 * and limits without state, and a reset resets nothing.
 */
@Endpoint(id = "ratelimiter", defaultAccess = Access.READ_ONLY)
public final class RateLimiterEndpoint {

  private final RateLimitStore store;
  private final @Nullable StoreAdministration administration;
  private final RateLimitPolicies policies;
  private final RateLimitPlanResolver plans;
  private final KeyIds ids;
  private final int defaultTop;
  private final int maxTop;
  private final Map<String, KeyScope> scopes = new HashMap<>();
  private final UpstreamRoutes upstreams;
  private final @Nullable UpstreamWaitingRoom room;

  /**
   * Creates the endpoint.
   *
   * @param store the store to inspect
   * @param policies the policies
   * @param ids the ids the endpoint shows for API keys and accepts in their place
   * @param defaultTop keys listed per budget when the request names no {@code top}
   * @param maxTop the most keys per budget a request may ask for
   */
  public RateLimiterEndpoint(
      RateLimitStore store, RateLimitPolicies policies, KeyIds ids, int defaultTop, int maxTop) {
    this(store, policies, RateLimitPlanResolver.fixed(policies.defaultPlan()), ids, defaultTop, maxTop);
  }

  /**
   * Creates the endpoint with the resolver of each key's plan, which it shows and assigns.
   *
   * @param store the store to inspect
   * @param policies the policies
   * @param plans the resolver of each key's plan
   * @param ids the ids the endpoint shows for API keys and accepts in their place
   * @param defaultTop keys listed per budget when the request names no {@code top}
   * @param maxTop the most keys per budget a request may ask for
   */
  public RateLimiterEndpoint(RateLimitStore store, RateLimitPolicies policies,
      RateLimitPlanResolver plans, KeyIds ids, int defaultTop, int maxTop) {
    this(store, policies, plans, ids, defaultTop, maxTop, UpstreamRoutes.NONE);
  }

  /**
   * Creates the endpoint with the resolver of each key's plan and the upstreams it reports on.
   *
   * @param store the store to inspect
   * @param policies the policies
   * @param plans the resolver of each key's plan
   * @param ids the ids the endpoint shows for API keys and accepts in their place
   * @param defaultTop keys listed per budget when the request names no {@code top}
   * @param maxTop the most keys per budget a request may ask for
   * @param upstreams the configured upstreams, whose status the report lists
   */
  public RateLimiterEndpoint(RateLimitStore store, RateLimitPolicies policies,
      RateLimitPlanResolver plans, KeyIds ids, int defaultTop, int maxTop,
      UpstreamRoutes upstreams) {
    this(store, policies, plans, ids, defaultTop, maxTop, upstreams, null);
  }

  /**
   * Creates the endpoint with the upstreams it reports on and the room where calls wait for them.
   *
   * @param store the store to inspect
   * @param policies the policies
   * @param plans the resolver of each key's plan
   * @param ids the ids the endpoint shows for API keys and accepts in their place
   * @param defaultTop keys listed per budget when the request names no {@code top}
   * @param maxTop the most keys per budget a request may ask for
   * @param upstreams the configured upstreams, whose status the report lists
   * @param room where calls wait for the upstreams, whose queue lengths the report lists; {@code
   *     null} when no call waits
   */
  public RateLimiterEndpoint(RateLimitStore store, RateLimitPolicies policies,
      RateLimitPlanResolver plans, KeyIds ids, int defaultTop, int maxTop,
      UpstreamRoutes upstreams, @Nullable UpstreamWaitingRoom room) {
    this.room = room;
    this.upstreams = upstreams;
    this.store = store;
    this.administration = store.administration().orElse(null);
    this.policies = policies;
    this.plans = plans;
    this.ids = ids;
    this.defaultTop = defaultTop;
    this.maxTop = maxTop;
    for (RateLimitPolicy p : policies.all().values()) {
      for (RateLimitPolicy.Level level : p.levels()) {
        scopes.put(level.budget().name(), level.scope());
        level.models().values().forEach(b -> scopes.put(b.name(), level.scope()));
      }
    }
  }

  /**
   * Returns the configuration and the most used keys of every budget.
   *
   * @param top how many keys to list per budget, from 1 to the configured maximum
   * @return the report
   */
  @ReadOperation
  public Report report(@Nullable Integer top) {
    int n = top == null ? defaultTop : Math.max(1, Math.min(maxTop, top));
    Map<String, PolicyView> views = new LinkedHashMap<>();
    policies.all().forEach((name, p) -> views.put(name, PolicyView.of(p)));
    List<BudgetState> budgets = new ArrayList<>();
    StoreAdministration admin = administration;
    for (Budget b : admin == null ? List.<Budget>of() : policies.allBudgets()) {
      List<KeyState> keys = new ArrayList<>();
      for (KeySnapshot s : admin.top(b, n)) {
        keys.add(state(s));
      }
      budgets.add(new BudgetState(b.name(), admin.trackedKeys(b), keys));
    }
    return new Report(policies.composition().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'),
        store.getClass().getSimpleName(), policies.defaultPolicy(), views, budgets,
        admin == null ? List.of() : topSpenders(admin, n), upstreamViews());
  }

  /** Every upstream's status, or the store's failure to give it. */
  private List<UpstreamView> upstreamViews() {
    List<UpstreamView> views = new ArrayList<>();
    for (Upstream u : upstreams.upstreams().values()) {
      UpstreamStatus status = null;
      String error = null;
      try {
        status = store.upstreamStatus(u);
      } catch (RuntimeException e) {
        error = e.getClass().getSimpleName();
      }
      views.add(new UpstreamView(u.name(), u.requests() == null ? null : u.requests().limit(),
          u.modelTokens() == null ? null : u.modelTokens().limit(),
          u.concurrency() == null ? null : u.concurrency().limit(), status, error,
          waiting(u)));
    }
    return views;
  }

  /**
   * The calls waiting for an upstream: in the store's shared order (every instance's) when it
   * keeps one and answers within a second, else in this instance's room.
   */
  private int waiting(Upstream u) {
    UpstreamOrder order = store.upstreamOrder();
    if (order != null) {
      try {
        long n = order.waiting(u).toCompletableFuture().get(1, TimeUnit.SECONDS);
        return (int) Math.min(Integer.MAX_VALUE, n);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (ExecutionException | TimeoutException | RuntimeException e) {
        // the room's own count below
      }
    }
    return room == null ? 0 : room.waiting(u.name());
  }

  /**
   * The top spenders of every quota of every level, each quota state once: the quotas of the
   * default plan first, then those only some plan carries.
   */
  private List<QuotaTop> topSpenders(StoreAdministration admin, int n) {
    Map<String, Map.Entry<Budget, QuotaLimit>> quotas = new LinkedHashMap<>();
    List<String> plansFirstDefault = new ArrayList<>();
    plansFirstDefault.add(policies.defaultPlan());
    policies.plans().stream().filter(p -> !p.equals(policies.defaultPlan())).forEach(plansFirstDefault::add);
    Map<String, String> policyOf = new HashMap<>();
    for (String plan : plansFirstDefault) {
      for (RateLimitPolicy p : policies.all().values()) {
        for (RateLimitPolicy.Level level : p.levels(plan)) {
          List<Budget> budgets = new ArrayList<>();
          budgets.add(level.budget());
          budgets.addAll(level.models().values());
          for (Budget b : budgets) {
            policyOf.putIfAbsent(b.name(), level.policy());
            for (QuotaLimit q : b.quotas()) {
              quotas.putIfAbsent(b.name() + '\u0000' + q.stateId(), Map.entry(b, q));
            }
          }
        }
      }
    }
    Map<String, String> planOf = new HashMap<>();
    List<QuotaTop> tops = new ArrayList<>();
    for (Map.Entry<Budget, QuotaLimit> e : quotas.values()) {
      Budget budget = e.getKey();
      QuotaLimit quota = e.getValue();
      List<QuotaSpend> spenders = admin.topSpenders(budget, quota, n);
      QuotaStatus current = null;
      List<SpenderState> top = new ArrayList<>();
      for (QuotaSpend s : spenders) {
        String apiKey = apiKeyOf(budget.name(), s.key());
        String plan = apiKey == null ? null : planOf.computeIfAbsent(apiKey, this::plan);
        QuotaLimit own = plan == null ? quota : quotaUnder(plan, budget.name(), quota);
        if (current == null) {
          // the store's own calendar: the period its counts are in
          current = admin.quotas(budget, s.key()).stream()
              .filter(q -> q.quota().stateId().equals(quota.stateId())).findFirst().orElse(null);
        }
        top.add(new SpenderState(apiKey == null ? s.key() : KeyMasking.mask(apiKey),
            apiKey == null ? null : ids.id(apiKey), modelOf(budget.name(), s.key()), plan, s.used(),
            own == null ? null : own.limit(), own == null ? null : Math.max(0, own.limit() - s.used()),
            own == null ? null : own.enforce(), amount(quota.unit(), s.used()),
            own == null ? null : amount(quota.unit(), own.limit()),
            own == null ? null : amount(quota.unit(), Math.max(0, own.limit() - s.used()))));
      }
      tops.add(new QuotaTop(policyOf.get(budget.name()), budget.name(), quota.name(), unitName(quota.unit()),
          periodName(quota), quota.zone().getId(), quota.limit(), amount(quota.unit(), quota.limit()),
          quota.enforce(), current == null ? null : iso(current.periodStartMs()),
          current == null ? null : iso(current.periodEndMs()), top));
    }
    return tops;
  }

  /** The quota of that state under a plan's variant of a budget, or null when it has none. */
  private @Nullable QuotaLimit quotaUnder(String plan, String budget, QuotaLimit quota) {
    for (Budget b : policies.allBudgets(plan)) {
      if (b.name().equals(budget)) {
        for (QuotaLimit q : b.quotas()) {
          if (q.stateId().equals(quota.stateId())) {
            return q;
          }
        }
      }
    }
    return null;
  }

  /**
   * Returns one API key's state in every budget it is tracked in.
   *
   * @param key the API key in clear, or its id
   * @param model a model to look up besides those with overrides, or null
   * @return the key's state, or {@code null} (404) when no budget tracks it
   */
  @ReadOperation
  public @Nullable KeyReport key(@Selector String key, @Nullable String model) {
    String apiKey = resolve(key);
    String plan = plan(apiKey);
    Map<String, Budget> underPlan = new LinkedHashMap<>();
    for (Budget b : policies.allBudgets(plan)) {
      underPlan.put(b.name(), b);
    }
    List<KeyState> states = new ArrayList<>();
    for (Map.Entry<Budget, String> e : storeKeys(apiKey, model)) {
      // read under the key's plan: the state shows the limits its calls carry
      Budget budget = underPlan.getOrDefault(e.getKey().name(), e.getKey());
      Optional<KeySnapshot> s = administration == null ? Optional.empty()
          : administration.inspect(budget, e.getValue());
      s.ifPresent(snapshot -> states.add(state(snapshot)));
    }
    List<QuotaState> quotas = quotas(apiKey, plan, model);
    boolean assigned = plans.assigned(apiKey);
    if (states.isEmpty() && !assigned && quotas.stream().allMatch(q -> q.used() == 0)) {
      return null;
    }
    List<BudgetView> limits = new ArrayList<>();
    for (Budget b : underPlan.values()) {
      limits.add(BudgetView.of(b));
    }
    return new KeyReport(KeyMasking.mask(apiKey), ids.id(apiKey), plan, assigned, limits, states, quotas);
  }

  /**
   * Where each quota of every level stands for a key under its plan: every quota of the budgets
   * its calls without a model use, and those of other (budget, model) entries it used this period.
   */
  private List<QuotaState> quotas(String apiKey, String plan, @Nullable String model) {
    StoreAdministration admin = administration;
    if (admin == null) {
      return List.of();
    }
    Set<@Nullable String> models = knownModels(model);
    Set<String> seen = new HashSet<>();
    List<QuotaState> quotas = new ArrayList<>();
    for (RateLimitPolicy p : policies.all().values()) {
      for (RateLimitPolicy.Level level : p.levels(plan)) {
        if (level.scope() == KeyScope.GLOBAL) {
          continue;
        }
        List<Map.Entry<String, Boolean>> keys = new ArrayList<>();
        List<Budget> budgets = new ArrayList<>();
        for (String m : models) {
          budgets.add(level.budgetFor(m));
          keys.add(Map.entry(level.keyFor(RateLimitKey.of(apiKey, m)), m == null));
        }
        if (level.scope() == KeyScope.API_KEY_AND_MODEL && !level.budget().quotas().isEmpty()) {
          for (KeySnapshot s : top(level.budget())) {
            if (apiKey.equals(apiKeyOf(s))) {
              budgets.add(level.budget());
              keys.add(Map.entry(s.key(), false));
            }
          }
        }
        for (int i = 0; i < keys.size(); i++) {
          Budget budget = budgets.get(i);
          String storeKey = keys.get(i).getKey();
          if (budget.quotas().isEmpty() || !seen.add(budget.name() + '\u0000' + storeKey)) {
            continue;
          }
          List<QuotaStatus> statuses = admin.quotas(budget, storeKey);
          boolean shown = keys.get(i).getValue() || statuses.stream().anyMatch(q -> q.used() > 0);
          for (QuotaStatus q : shown ? statuses : List.<QuotaStatus>of()) {
            quotas.add(QuotaState.of(level.policy(), q, modelOf(budget.name(), storeKey)));
          }
        }
      }
    }
    return quotas;
  }

  /** An amount of a unit as a decimal of the currency for cost (micro-units), else null. */
  static @Nullable String amount(QuotaUnit unit, long amount) {
    if (unit != QuotaUnit.COST) {
      return null;
    }
    BigDecimal d = BigDecimal.valueOf(amount, 6).stripTrailingZeros();
    return (d.scale() < 2 ? d.setScale(2) : d).toPlainString();
  }

  private static String unitName(QuotaUnit unit) {
    return unit.name().toLowerCase(Locale.ROOT);
  }

  private static String periodName(QuotaLimit quota) {
    return quota.period().name().toLowerCase(Locale.ROOT);
  }

  private static String iso(long epochMs) {
    return Instant.ofEpochMilli(epochMs).toString();
  }

  /**
   * Assigns a plan to one API key, or clears its assignment, from the JSON body {@code
   * {"plan":"pro"}} or {@code {"plan":null}}: the key's later calls carry the plan's limits, on
   * every instance within {@code ratelimiter.plan-refresh}; nothing it spent is reset. Available
   * only when the application grants {@code management.endpoint.ratelimiter.access=unrestricted},
   * like a reset.
   *
   * @param key the API key in clear, or its id
   * @param plan one of the configured plans, or {@code null} to clear the assignment
   * @return the key's plan now (200); 400 naming an unknown plan; 409 when the plan resolver takes
   *     no assignments (plans kept elsewhere); 503 when the store cannot write it now
   */
  @WriteOperation
  public WebEndpointResponse<Map<String, Object>> assign(@Selector String key, @Nullable String plan) {
    String apiKey = resolve(key);
    if (plan != null && !policies.containsPlan(plan)) {
      return problem(WebEndpointResponse.STATUS_BAD_REQUEST, "Bad Request", "Unknown plan '" + plan
          + "': a plan must be one of " + policies.plans() + ", or null to clear the assignment");
    }
    try {
      plans.assign(apiKey, plan);
    } catch (UnsupportedOperationException e) {
      return problem(409, "Conflict", "Plans are not assigned here: " + e.getMessage());
    } catch (IllegalArgumentException e) {
      return problem(WebEndpointResponse.STATUS_BAD_REQUEST, "Bad Request", e.getMessage());
    } catch (IllegalStateException e) {
      return problem(WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE, "Service Unavailable",
          "The store cannot keep the assignment now; nothing was assigned: " + e.getMessage());
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("key", KeyMasking.mask(apiKey));
    body.put("id", ids.id(apiKey));
    body.put("plan", plan == null ? policies.defaultPlan() : plan);
    body.put("assigned", plan != null);
    return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_OK);
  }

  private static WebEndpointResponse<Map<String, Object>> problem(
      int status, String title, @Nullable String detail) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("title", title);
    body.put("status", status);
    body.put("detail", detail);
    return new WebEndpointResponse<>(body, status);
  }

  /** The plan a key's calls are decided under now. */
  private String plan(String apiKey) {
    try {
      String plan = plans.plan(apiKey);
      return policies.containsPlan(plan) ? plan : policies.defaultPlan();
    } catch (RuntimeException e) {
      return policies.defaultPlan();
    }
  }

  /**
   * Resets one API key in every budget, giving it full budgets again.
   *
   * @param key the API key in clear, or its id
   * @param model a model to reset besides those with overrides, or null
   * @return how many budget entries were reset
   */
  @DeleteOperation
  public ResetReport reset(@Selector String key, @Nullable String model) {
    String apiKey = resolve(key);
    int reset = 0;
    for (Map.Entry<Budget, String> e : storeKeys(apiKey, model)) {
      if (administration != null && administration.reset(e.getKey(), e.getValue())) {
        reset++;
      }
    }
    return new ResetReport(KeyMasking.mask(apiKey), ids.id(apiKey), reset);
  }

  /** The {@code max-top} most used keys of a budget; none without administration. */
  private List<KeySnapshot> top(Budget budget) {
    return administration == null ? List.of() : administration.top(budget, maxTop);
  }

  /** The API key a selector names: a tracked key whose id it is, else the selector itself. */
  private String resolve(String selector) {
    if (KeyIds.isId(selector)) {
      for (Budget b : policies.allBudgets()) {
        for (KeySnapshot s : top(b)) {
          String apiKey = apiKeyOf(s);
          if (apiKey != null && ids.id(apiKey).equals(selector)) {
            return apiKey;
          }
        }
      }
    }
    return selector;
  }

  /** No model, the request's model, and every model a level overrides. */
  private Set<@Nullable String> knownModels(@Nullable String model) {
    Set<@Nullable String> models = new LinkedHashSet<>();
    models.add(null);
    if (model != null && !model.isBlank()) {
      models.add(model);
    }
    for (RateLimitPolicy p : policies.all().values()) {
      for (RateLimitPolicy.Level level : p.levels()) {
        models.addAll(level.models().keySet());
      }
    }
    return models;
  }

  /** Every (budget, store key) an API key can have: without a model, and with each known model. */
  private List<Map.Entry<Budget, String>> storeKeys(String apiKey, @Nullable String model) {
    Set<@Nullable String> models = knownModels(model);
    Set<String> seen = new HashSet<>();
    List<Map.Entry<Budget, String>> keys = new ArrayList<>();
    for (RateLimitPolicy p : policies.all().values()) {
      for (RateLimitPolicy.Level level : p.levels()) {
        if (level.scope() == KeyScope.GLOBAL) {
          continue;
        }
        for (String m : models) {
          add(keys, seen, level.budgetFor(m), level.keyFor(RateLimitKey.of(apiKey, m)));
        }
        if (level.scope() == KeyScope.API_KEY_AND_MODEL) {
          // models without an override share the level's budget, one entry per model: find them
          for (KeySnapshot s : top(level.budget())) {
            if (apiKey.equals(apiKeyOf(s))) {
              add(keys, seen, level.budget(), s.key());
            }
          }
        }
      }
    }
    return keys;
  }

  private static void add(
      List<Map.Entry<Budget, String>> keys, Set<String> seen, Budget budget, String storeKey) {
    if (seen.add(budget.name() + '\u0000' + storeKey)) {
      keys.add(Map.entry(budget, storeKey));
    }
  }

  private KeyState state(KeySnapshot s) {
    String apiKey = apiKeyOf(s);
    String model = modelOf(s);
    return new KeyState(s.budget(), apiKey == null ? s.key() : KeyMasking.mask(apiKey),
        apiKey == null ? null : ids.id(apiKey), model, s.windowUsed(), s.windowLimit(),
        s.tokens(), s.capacity(), s.nextFreeMs(), s.modelTokensUsed(), s.modelTokenLimit(),
        s.inFlight(), s.concurrencyLimit());
  }

  /** The API key of a snapshot, or null for the global key. */
  private @Nullable String apiKeyOf(KeySnapshot s) {
    return apiKeyOf(s.budget(), s.key());
  }

  /** The API key of a store key of a budget, or null for the global key or a store's hash. */
  private @Nullable String apiKeyOf(String budget, String storeKey) {
    if (storeHash(storeKey)) {
      return null; // the store keeps only the key's hash: shown as it is, never in clear
    }
    KeyScope scope = scopes.getOrDefault(budget, KeyScope.API_KEY);
    if (scope == KeyScope.GLOBAL) {
      return null;
    }
    String[] parts = scope == KeyScope.API_KEY_AND_MODEL ? composite(storeKey) : null;
    return parts == null ? storeKey : parts[0];
  }

  private @Nullable String modelOf(KeySnapshot s) {
    return modelOf(s.budget(), s.key());
  }

  private @Nullable String modelOf(String budget, String storeKey) {
    int slash = budget.indexOf('/');
    if (slash >= 0) {
      return budget.substring(slash + 1);
    }
    String[] parts = scopes.get(budget) == KeyScope.API_KEY_AND_MODEL ? composite(storeKey) : null;
    return parts == null ? null : parts[1];
  }

  /** Whether a store key is a store's hash of the key ({@code #} and 22 base64url characters). */
  private static boolean storeHash(String key) {
    return key.length() == 23 && key.charAt(0) == '#'
        && key.chars().skip(1).allMatch(c -> c < 128 && (Character.isLetterOrDigit(c) || c == '-' || c == '_'));
  }

  /** Splits {@code length:apiKey:model}, or returns null when the key is not composite. */
  private static String @Nullable [] composite(String key) {
    int colon = key.indexOf(':');
    if (colon <= 0) {
      return null;
    }
    int length;
    try {
      length = Integer.parseInt(key.substring(0, colon));
    } catch (NumberFormatException e) {
      return null;
    }
    int end = colon + 1 + length;
    if (length <= 0 || end >= key.length() || key.charAt(end) != ':') {
      return null;
    }
    return new String[] {key.substring(colon + 1, end), key.substring(end + 1)};
  }

  /**
   * The endpoint's main report.
   *
   * @param composition the composition mode
   * @param store the store's type
   * @param defaultPolicy the default policy's name
   * @param policies the policies, by name
   * @param budgets the live state of every budget
   * @param quotas the top spenders of every quota in its current period
   * @param upstreams every configured upstream with its status
   */
  public record Report(String composition, String store, String defaultPolicy,
      Map<String, PolicyView> policies, List<BudgetState> budgets, List<QuotaTop> quotas,
      List<UpstreamView> upstreams) {}

  /**
   * An upstream: its configured limits and where it stands on the store.
   *
   * @param name the upstream's name
   * @param rpm the configured requests per minute, or null
   * @param tpm the configured model tokens per minute, or null
   * @param concurrency the configured calls in flight, or null
   * @param status its status on the store, or null when the store could not answer
   * @param error the type of the store's failure when it could not answer, else null
   * @param waiting the calls waiting for it on this instance now
   */
  public record UpstreamView(String name, @Nullable Long rpm, @Nullable Long tpm,
      @Nullable Long concurrency, @Nullable UpstreamStatus status, @Nullable String error,
      int waiting) {}

  /**
   * The keys that used the most of one quota in its current period.
   *
   * @param policy the policy that defines the quota's level
   * @param budget the name of the budget that holds the quota
   * @param quota the quota's name
   * @param unit {@code requests}, {@code tokens} or {@code cost}
   * @param period {@code hour}, {@code day}, {@code week} or {@code month}
   * @param zone the time zone of the period's calendar
   * @param limit the quota's limit under the default plan (or the first plan that carries it);
   *     cost in micro-units
   * @param limitAmount for cost, the limit in the currency as an exact decimal; else null
   * @param enforce whether the quota denies ({@code false}: shadow mode)
   * @param periodStart the current period's first instant, ISO-8601, or null when no key spent
   * @param periodEnd the current period's end, ISO-8601, or null when no key spent
   * @param top the keys that used the most, most first
   */
  public record QuotaTop(@Nullable String policy, String budget, String quota, String unit,
      String period, String zone, long limit, @Nullable String limitAmount, boolean enforce,
      @Nullable String periodStart, @Nullable String periodEnd, List<SpenderState> top) {}

  /**
   * What one key used of a quota in its current period.
   *
   * @param key the API key, masked (or the store's hash of it, or the global key)
   * @param id the API key's id (a keyed hash), or null when the key is not known in clear
   * @param model the model, when the quota's budget is per model
   * @param plan the key's plan, or null when the key is not known in clear
   * @param used what it used (cost in micro-units)
   * @param limit the quota's limit under its plan, or null when its plan carries no such quota
   * @param remaining what is left of that limit, or null
   * @param enforce whether the quota denies under its plan, or null
   * @param usedAmount for cost, {@code used} in the currency as an exact decimal; else null
   * @param limitAmount for cost, {@code limit} in the currency as an exact decimal; else null
   * @param remainingAmount for cost, {@code remaining} in the currency as an exact decimal; else
   *     null
   */
  public record SpenderState(String key, @Nullable String id, @Nullable String model,
      @Nullable String plan, long used, @Nullable Long limit, @Nullable Long remaining,
      @Nullable Boolean enforce, @Nullable String usedAmount, @Nullable String limitAmount,
      @Nullable String remainingAmount) {}

  /**
   * Where one quota stands for one key in its current period, with the limits of the key's plan.
   *
   * @param policy the policy that defines the quota's level
   * @param budget the name of the budget that holds the quota
   * @param model the model, when the quota's budget is per model
   * @param quota the quota's name
   * @param unit {@code requests}, {@code tokens} or {@code cost}
   * @param used what the key used this period (cost in micro-units)
   * @param limit the limit (cost in micro-units)
   * @param remaining what is left: {@code max(0, limit - used)}
   * @param period {@code hour}, {@code day}, {@code week} or {@code month}
   * @param zone the time zone of the period's calendar
   * @param periodStart the period's first instant, ISO-8601
   * @param periodEnd the period's end (when the quota resets), ISO-8601
   * @param enforce whether the quota denies ({@code false}: shadow mode, it only counts)
   * @param exceeded whether the quota is spent: a call now would be denied, or in shadow mode
   *     would have been
   * @param thresholds the percentages of the limit whose crossing is reported
   * @param usedAmount for cost, {@code used} in the currency as an exact decimal; else null
   * @param limitAmount for cost, {@code limit} in the currency as an exact decimal; else null
   * @param remainingAmount for cost, {@code remaining} in the currency as an exact decimal; else
   *     null
   */
  public record QuotaState(String policy, String budget, @Nullable String model, String quota,
      String unit, long used, long limit, long remaining, String period, String zone,
      String periodStart, String periodEnd, boolean enforce, boolean exceeded,
      List<Integer> thresholds, @Nullable String usedAmount, @Nullable String limitAmount,
      @Nullable String remainingAmount) {

    static QuotaState of(String policy, QuotaStatus s, @Nullable String model) {
      QuotaLimit q = s.quota();
      return new QuotaState(policy, s.level(), model, q.name(), unitName(q.unit()), s.used(), q.limit(),
          s.remaining(), periodName(q), q.zone().getId(), iso(s.periodStartMs()), iso(s.periodEndMs()),
          q.enforce(), s.exceeded(), q.thresholds(), amount(q.unit(), s.used()),
          amount(q.unit(), q.limit()), amount(q.unit(), s.remaining()));
    }
  }

  /**
   * A policy's configuration.
   *
   * @param levels the levels, root first
   */
  public record PolicyView(List<LevelView> levels) {

    static PolicyView of(RateLimitPolicy policy) {
      List<LevelView> levels = new ArrayList<>();
      for (RateLimitPolicy.Level l : policy.levels()) {
        Map<String, BudgetView> models = new LinkedHashMap<>();
        l.models().forEach((m, b) -> models.put(m, BudgetView.of(b)));
        levels.add(new LevelView(l.policy(), l.scope().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-'),
            BudgetView.of(l.budget()), models));
      }
      return new PolicyView(levels);
    }
  }

  /**
   * One level's configuration.
   *
   * @param policy the policy that defines the level
   * @param scope what the level counts per
   * @param budget the level's budget
   * @param models the per-model budgets
   */
  public record LevelView(String policy, String scope, BudgetView budget, Map<String, BudgetView> models) {}

  /**
   * A budget's limits.
   *
   * @param name the budget's name
   * @param rpmLimit requests per window, or null
   * @param window the window, ISO-8601, or null
   * @param burstCapacity the bucket's capacity, or null
   * @param refillPerSecond the bucket's refill rate, or null
   * @param tpmLimit model tokens per model-token window, or null
   * @param tpmWindow the model-token window, ISO-8601, or null
   * @param concurrencyLimit the most calls in flight at once, or null
   * @param leaseTimeout the longest a call holds its slot, ISO-8601, or null
   */
  public record BudgetView(String name, @Nullable Long rpmLimit, @Nullable String window,
      @Nullable Double burstCapacity, @Nullable Double refillPerSecond, @Nullable Long tpmLimit,
      @Nullable String tpmWindow, @Nullable Long concurrencyLimit, @Nullable String leaseTimeout) {

    static BudgetView of(Budget b) {
      WindowLimit w = b.window();
      BucketLimit k = b.bucket();
      ModelTokenLimit m = b.modelTokens();
      ConcurrencyLimit c = b.concurrency();
      return new BudgetView(b.name(), w == null ? null : w.limit(), w == null ? null : w.window().toString(),
          k == null ? null : k.capacity(), k == null ? null : k.refillPerSecond(),
          m == null ? null : m.limit(), m == null ? null : m.window().toString(),
          c == null ? null : c.limit(), c == null ? null : c.leaseTimeout().toString());
    }
  }

  /**
   * A budget's live state.
   *
   * @param budget the budget's name
   * @param trackedKeys how many keys the store tracks for it
   * @param top the most used keys, most used first
   */
  public record BudgetState(String budget, long trackedKeys, List<KeyState> top) {}

  /**
   * One key's state in one budget.
   *
   * @param budget the budget's name
   * @param key the API key, masked (or {@code global})
   * @param id the API key's id (a keyed hash), or null for the global key
   * @param model the model, when the budget is per model
   * @param windowUsed calls counted in the current window
   * @param windowLimit the window's limit
   * @param tokens tokens in the bucket
   * @param capacity the bucket's capacity
   * @param nextFreeMs milliseconds until a unit-cost call would be admitted
   * @param modelTokensUsed model tokens counted in the current model-token window (reserved
   *     estimates of calls in flight, usage of settled ones)
   * @param modelTokenLimit the model-token limit (0 without one)
   * @param inFlight the calls holding a slot now
   * @param concurrencyLimit the limit on calls in flight (0 without one)
   */
  public record KeyState(String budget, String key, @Nullable String id, @Nullable String model,
      long windowUsed, long windowLimit, double tokens, double capacity, long nextFreeMs,
      long modelTokensUsed, long modelTokenLimit, long inFlight, long concurrencyLimit) {}

  /**
   * One API key's state.
   *
   * @param key the API key, masked
   * @param id the key's id (a keyed hash)
   * @param plan the plan its calls are decided under
   * @param assigned whether the plan is assigned to it (else it is the default plan)
   * @param limits the effective limits of every budget under its plan
   * @param budgets its state in each budget that tracks it
   * @param quotas where each quota of its levels stands this period, with its plan's limits
   */
  public record KeyReport(String key, String id, String plan, boolean assigned,
      List<BudgetView> limits, List<KeyState> budgets, List<QuotaState> quotas) {}

  /**
   * The result of a reset.
   *
   * @param key the API key, masked
   * @param id the key's id (a keyed hash)
   * @param reset how many budget entries were reset
   */
  public record ResetReport(String key, String id, int reset) {}
}
