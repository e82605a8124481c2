package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.gateway.BodyLimits;
import io.github.llmratelimiter.gateway.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.gateway.LimitSettings;
import io.github.llmratelimiter.gateway.ModelSource;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.PlanSettings;
import io.github.llmratelimiter.gateway.PolicySettings;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitSettings;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.util.unit.DataSize;

/**
 * Turns the bound {@code ratelimiter.*} properties into the gateway's plain settings, and validates
 * the properties the gateway does not model, each failure naming its property.
 */
final class RateLimiterSettings {

  private static final String PREFIX = RateLimitPolicies.PREFIX;

  private RateLimiterSettings() {}

  /**
   * Resolves the policies of the properties and checks that every route names one of them.
   *
   * @throws InvalidRateLimitPropertyException naming the first invalid property
   */
  static RateLimitPolicies policies(RateLimiterProperties properties) {
    validate(properties);
    RateLimitPolicies policies = RateLimitPolicies.from(settings(properties));
    List<RateLimiterProperties.Route> routes = properties.getWeb().getRoutes();
    for (int i = 0; i < routes.size(); i++) {
      String policy = routes.get(i).getPolicy();
      if (policy != null && !policies.contains(policy)) {
        throw new InvalidRateLimitPropertyException(PREFIX + "web.routes[" + i + "].policy", policy,
            "one of the policies " + policies.all().keySet());
      }
    }
    return policies;
  }

  /** The settings the policies are resolved from. */
  static RateLimitSettings settings(RateLimiterProperties p) {
    LimitSettings top = new LimitSettings(p.getRpm().getLimit(), p.getRpm().getWindow(),
        p.getBurst().getCapacity(), p.getBurst().getRefillPerSecond(), p.getTpm().getLimit(),
        p.getTpm().getWindow());
    Map<String, PolicySettings> policies = new LinkedHashMap<>();
    p.getPolicies().forEach((name, policy) -> policies.put(name, new PolicySettings(
        limits(policy), policy.getScope(), models(policy.getModels()), policy.getParent())));
    Map<String, PlanSettings> plans = new LinkedHashMap<>();
    p.getPlans().forEach((name, plan) -> {
      Map<String, PolicySettings> overrides = new LinkedHashMap<>();
      if (plan != null) {
        plan.getPolicies().forEach((policy, o) -> overrides.put(policy,
            new PolicySettings(limits(o), null, models(o.getModels()), null)));
      }
      plans.put(name, new PlanSettings(overrides));
    });
    return new RateLimitSettings(p.getComposition(), p.getDefaultPolicy(),
        new PolicySettings(top, p.getScope(), models(p.getModels()), null), policies,
        p.getDefaultPlan(), plans);
  }

  private static Map<String, LimitSettings> models(Map<String, RateLimiterProperties.Limits> models) {
    Map<String, LimitSettings> limits = new LinkedHashMap<>();
    models.forEach((model, l) -> limits.put(model, limits(l)));
    return limits;
  }

  private static LimitSettings limits(RateLimiterProperties.Limits l) {
    return new LimitSettings(l.getRpm().getLimit(), l.getRpm().getWindow(), l.getBurst().getCapacity(),
        l.getBurst().getRefillPerSecond(), l.getTpm().getLimit(), l.getTpm().getWindow(),
        l.getConcurrency().getLimit(), l.getConcurrency().getLeaseTimeout());
  }

  /** Checks the top-level properties that shape no budget. */
  private static void validate(RateLimiterProperties props) {
    anonymousKey(props);
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
  static BodyLimits bodyLimits(RateLimiterProperties.Web web) {
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
}
