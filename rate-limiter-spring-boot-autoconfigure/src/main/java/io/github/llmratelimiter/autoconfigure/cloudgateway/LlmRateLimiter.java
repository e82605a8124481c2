package io.github.llmratelimiter.autoconfigure.cloudgateway;

import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.cloud.gateway.config.GatewayProperties;
import org.springframework.cloud.gateway.event.FilterArgsEvent;
import org.springframework.cloud.gateway.filter.FilterDefinition;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.route.RouteDefinition;
import org.springframework.cloud.gateway.route.RouteDefinitionRouteLocator;
import org.springframework.cloud.gateway.support.ConfigurationService;
import reactor.core.publisher.Mono;

/**
 * The limiter as Spring Cloud Gateway's own {@link
 * org.springframework.cloud.gateway.filter.ratelimit.RateLimiter}: a {@code RequestRateLimiter}
 * filter that names this bean ({@code rate-limiter: "#{@llmRateLimiter}"}) charges each call
 * through the {@link RateLimitGateway}'s one charge step, without blocking, and answers with the
 * limiter's decision and headers.
 *
 * <p>The id the filter's {@code KeyResolver} resolved is the API key; the route's arguments under
 * {@value #CONFIGURATION_PROPERTY_NAME} ({@link Config}) choose the policy, the model and the cost,
 * and a route without them is charged to the default policy, without a model, at cost 1. An allowed
 * call goes on with the headers {@code RateLimit}, {@code RateLimit-Policy} and {@code
 * x-ratelimit-*}; a denied one gets the filter's status (429 unless the route sets another) with the
 * same headers and, when waiting clears the deny, {@code Retry-After} and {@code retry-after-ms}.
 * The filter writes no body.
 *
 * <p>The filter shows this limiter no request body, so a call reserves no model tokens: a policy's
 * model-token (TPM) budgets are read, not charged. {@code ratelimiter.web.routes} charges them.
 * Nor does the filter show it the end of a call: a route whose policy limits calls in flight
 * ({@code concurrency.limit}) fails start-up, since its slot could never be given back ({@code
 * ratelimiter.web.routes} holds and releases slots). A call is decided under its API key's plan.
 *
 * <p>Unlike the gateway's {@code RedisRateLimiter} (one token bucket per route and id, its own
 * {@code X-RateLimit-*} headers, no {@code Retry-After}, and every call allowed while Redis fails),
 * a call is charged to a policy: routes that name the same policy share the id's budget, on the
 * store the application configured (in memory per instance, or {@code ratelimiter.store=redis},
 * exact across instances), and a store failure follows {@code ratelimiter.store-failure}.
 *
 * <p>A call whose policy or model goes to an upstream ({@code ratelimiter.upstreams}) is decided
 * with the upstream in the same store call; an upstream that is full denies it with the filter's
 * status. The proxied response's status and rate-limit headers are then reported to the upstream
 * by {@link UpstreamReportFilter}, a {@code GlobalFilter}.
 *
 * <p>The arguments of the routes in the gateway's properties are checked at start-up: an unknown
 * argument under the prefix, an unknown policy or a cost that is not a positive number fails it,
 * naming the argument. Routes from elsewhere are checked when the gateway loads them.
 *
 * <p>Failures other than a rate-limit deny are error signals that carry the gateway's own exception,
 * which the reactive adapter answers as every front door does ({@link RateLimitGateway#reject}): a
 * store that cannot decide while failures deny (503), a blank id while missing keys are rejected
 * (401). Thread-safe.
 */
public final class LlmRateLimiter extends AbstractRateLimiter<LlmRateLimiter.Config>
    implements SmartInitializingSingleton {

  /** The prefix of this limiter's arguments on a route's {@code RequestRateLimiter} filter. */
  public static final String CONFIGURATION_PROPERTY_NAME = "llm-rate-limiter";

  private static final Set<String> ARGUMENTS = Set.of("policy", "model", "cost");
  /** The name of the gateway's filter that calls a {@code RateLimiter}. */
  private static final String REQUEST_RATE_LIMITER = "RequestRateLimiter";

  private final RateLimitGateway gateway;
  private final Supplier<@Nullable GatewayProperties> gatewayProperties;
  private final Config defaults = new Config();
  private final boolean filterDefault;

  /**
   * Creates the limiter.
   *
   * @param gateway the charge step
   * @param configurationService binds the routes' arguments, or {@code null} for none (every route
   *     is then charged with the defaults)
   * @param gatewayProperties the gateway's properties, whose routes are checked at start-up, or a
   *     supplier of {@code null} when there are none
   * @param filterDefault whether this is the {@code RequestRateLimiter} filter's default limiter
   *     (the application's only {@code RateLimiter}), which a filter without a {@code rate-limiter}
   *     argument uses
   */
  LlmRateLimiter(RateLimitGateway gateway, @Nullable ConfigurationService configurationService,
      Supplier<@Nullable GatewayProperties> gatewayProperties, boolean filterDefault) {
    super(Config.class, CONFIGURATION_PROPERTY_NAME, configurationService);
    this.gateway = gateway;
    this.gatewayProperties = gatewayProperties;
    this.filterDefault = filterDefault;
  }

  /**
   * Charges one call of a route to the API key its key resolver found.
   *
   * @param routeId the route's id
   * @param id the key the route's {@code KeyResolver} resolved, charged as the API key
   * @return the decision with the limiter's headers, once the store has answered; an error signal
   *     with the gateway's exception for a failure that is not a rate-limit deny
   */
  @Override
  public Mono<Response> isAllowed(String routeId, String id) {
    Config config = config(routeId);
    return Mono.deferContextual(context -> Mono.fromCompletionStage(gateway.chargeAsync(
            null, config.getPolicy(), gateway.resolveKey(id, config.getModel()), config.getCost()))
        .map(outcome -> {
          if (outcome.slots() != null) {
            outcome.slots().releaseAsync(); // a route not checked at start-up: never hold a slot
          }
          if (outcome.upstream() != null) { // its response is reported by UpstreamReportFilter
            context.<AtomicReference<RateLimitOutcome>>getOrEmpty(UpstreamReportFilter.OUTCOME_KEY)
                .ifPresent(admitted -> admitted.set(outcome));
          }
          return new Response(true, headers(outcome));
        }))
        .onErrorResume(RateLimitExceededException.class, e ->
            e.decision().reason() == Reason.STORE_UNAVAILABLE
                ? Mono.error(e) // not a rate limit: the store is down and failing closed (503)
                : Mono.just(new Response(false, headers(e.outcome()))));
  }

  /**
   * Binds a route's arguments when the gateway loads the route, and rejects invalid ones.
   *
   * @param event the arguments of one filter of one route
   * @throws InvalidRateLimitPropertyException naming the first invalid argument
   */
  @Override
  public void onApplicationEvent(FilterArgsEvent event) {
    String routeId = event.getRouteId();
    check(routeId, event.getArgs());
    super.onApplicationEvent(event);
    Config bound = getConfig().get(routeId);
    if (bound != null) {
      try {
        check(routeId, bound);
      } catch (InvalidRateLimitPropertyException e) {
        getConfig().remove(routeId);
        throw e;
      }
    }
  }

  /**
   * Checks the arguments of every route the gateway's properties define, as the gateway will bind
   * them, so that an invalid one fails the start-up rather than the route.
   *
   * @throws InvalidRateLimitPropertyException naming the first invalid argument
   */
  @Override
  public void afterSingletonsInstantiated() {
    GatewayProperties properties = gatewayProperties.get();
    if (properties == null) {
      return;
    }
    for (FilterDefinition filter : properties.getDefaultFilters()) {
      onApplicationEvent(new FilterArgsEvent(this, RouteDefinitionRouteLocator.DEFAULT_FILTERS,
          new LinkedHashMap<>(filter.getArgs())));
    }
    for (RouteDefinition route : properties.getRoutes()) {
      for (FilterDefinition filter : route.getFilters()) {
        onApplicationEvent(new FilterArgsEvent(this, route.getId(), new LinkedHashMap<>(filter.getArgs())));
      }
    }
    for (FilterDefinition filter : properties.getDefaultFilters()) {
      checkWithoutArguments(RouteDefinitionRouteLocator.DEFAULT_FILTERS, filter);
    }
    for (RouteDefinition route : properties.getRoutes()) {
      for (FilterDefinition filter : route.getFilters()) {
        checkWithoutArguments(route.getId(), filter);
      }
    }
  }

  /**
   * Checks the defaults for a {@code RequestRateLimiter} filter that reaches this limiter without
   * arguments of its own (neither its route's nor the default filters'): its calls are charged to
   * the default policy, which must not limit calls in flight either.
   */
  private void checkWithoutArguments(String routeId, FilterDefinition filter) {
    if (!REQUEST_RATE_LIMITER.equals(filter.getName()) || config(routeId) != defaults) {
      return;
    }
    String limiter = filter.getArgs().get("rate-limiter");
    if (limiter == null) {
      limiter = filter.getArgs().get("rateLimiter");
    }
    if (limiter == null ? filterDefault
        : limiter.contains("@" + SpringCloudGatewayRateLimiterAutoConfiguration.RATE_LIMITER + "}")) {
      check(routeId, defaults);
    }
  }

  /** The configuration of a route: its own, else the default filters', else the defaults. */
  Config config(String routeId) {
    Config config = getConfig().get(routeId);
    if (config == null) {
      config = getConfig().get(RouteDefinitionRouteLocator.DEFAULT_FILTERS);
    }
    return config == null ? defaults : config;
  }

  /** Rejects an argument under this limiter's prefix that it does not know (a typo). */
  private static void check(String routeId, Map<String, ?> args) {
    String prefix = CONFIGURATION_PROPERTY_NAME + ".";
    for (Map.Entry<String, ?> arg : args.entrySet()) {
      String name = arg.getKey();
      if (name.startsWith(prefix) && !ARGUMENTS.contains(
          name.substring(prefix.length()).replace("-", "").toLowerCase(Locale.ROOT))) {
        throw new InvalidRateLimitPropertyException(argument(routeId, name), arg.getValue(),
            "one of " + prefix + "policy, " + prefix + "model or " + prefix + "cost");
      }
    }
  }

  private void check(String routeId, Config config) {
    RateLimitPolicies policies = gateway.enforcer().policies();
    String policy = config.getPolicy();
    if (policy != null && !policies.contains(policy)) {
      throw new InvalidRateLimitPropertyException(argument(routeId, CONFIGURATION_PROPERTY_NAME
          + ".policy"), policy, "one of the policies " + policies.all().keySet());
    }
    if (policies.policy(policy).allBudgets().stream().anyMatch(b -> b.concurrency() != null)) {
      throw new InvalidRateLimitPropertyException(argument(routeId, CONFIGURATION_PROPERTY_NAME
          + ".policy"), policies.policy(policy).name(), "a policy without concurrency.limit"
          + (policy == null ? " (unset, it is the default policy)" : "") + ": the"
          + " RequestRateLimiter filter never sees a call end, so it could not give its slot back"
          + " (limit calls in flight with ratelimiter.web.routes)");
    }
    double cost = config.getCost();
    if (!(cost > 0) || Double.isInfinite(cost)) {
      throw new InvalidRateLimitPropertyException(argument(routeId, CONFIGURATION_PROPERTY_NAME
          + ".cost"), cost, "a finite number > 0");
    }
  }

  private static String argument(String routeId, String name) {
    return "spring.cloud.gateway.server.webflux.routes[id=" + routeId + "].filters[RequestRateLimiter]"
        + ".args." + name;
  }

  private Map<String, String> headers(RateLimitOutcome outcome) {
    Map<String, String> headers = new LinkedHashMap<>();
    gateway.headers(outcome).forEach(h -> headers.put(h.name(), h.value()));
    return headers;
  }

  /**
   * What a route's {@code RequestRateLimiter} filter charges, bound from its arguments under {@value
   * #CONFIGURATION_PROPERTY_NAME}: for example {@code llm-rate-limiter.policy: chat}.
   */
  public static final class Config {

    /**
     * The policy the route's calls are charged to, one of {@code ratelimiter.policies} or the
     * default policy; unset, the default policy.
     */
    private @Nullable String policy;

    /**
     * The model the route's calls are charged to (policies scoped per API key and model, and
     * per-model limits, use it); unset, none.
     */
    private @Nullable String model;

    /**
     * The bucket tokens each call costs, a finite number above 0; request windows count every call
     * once.
     */
    private double cost = 1;

    /** Creates the configuration with its defaults: the default policy, no model, cost 1. */
    public Config() {}

    /**
     * Returns the policy the route's calls are charged to.
     *
     * @return the policy's name, or {@code null} for the default policy
     */
    public @Nullable String getPolicy() {
      return policy;
    }

    /**
     * Sets the policy the route's calls are charged to.
     *
     * @param policy the policy's name; {@code null} or blank for the default policy
     */
    public void setPolicy(@Nullable String policy) {
      this.policy = policy == null || policy.isBlank() ? null : policy.trim();
    }

    /**
     * Returns the model the route's calls are charged to.
     *
     * @return the model, or {@code null} for none
     */
    public @Nullable String getModel() {
      return model;
    }

    /**
     * Sets the model the route's calls are charged to.
     *
     * @param model the model; {@code null} or blank for none
     */
    public void setModel(@Nullable String model) {
      this.model = model == null || model.isBlank() ? null : model.trim();
    }

    /**
     * Returns the bucket tokens each call costs.
     *
     * @return the cost
     */
    public double getCost() {
      return cost;
    }

    /**
     * Sets the bucket tokens each call costs; checked when the route is loaded.
     *
     * @param cost the cost
     */
    public void setCost(double cost) {
      this.cost = cost;
    }

    @Override
    public String toString() {
      return "LlmRateLimiter.Config[policy=" + policy + ", model=" + model + ", cost=" + cost + "]";
    }
  }
}
