package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import java.net.URI;
import org.jspecify.annotations.Nullable;

/**
 * The default problem bodies. A 429 carries {@code type}, {@code title}, {@code status}, {@code
 * detail}, {@code instance} (the request path) and the members {@code reason}, {@code policy},
 * {@code level}, {@code retryable} and, when retryable, {@code retryAfterMs}; when the policy
 * limits model tokens, also {@code estimatedModelTokens}. A deny that waiting
 * cannot clear says so in its {@code detail} and has {@code retryable: false}.
 *
 * <p>A deny by a quota ({@link Reason#QUOTA_EXCEEDED}) also carries {@code quota} (its name),
 * {@code unit} ({@code requests}, {@code tokens} or {@code cost}), {@code limit} and {@code used}
 * (in the unit; cost in micro-units), {@code periodEnd} (ISO-8601, when it resets), and OpenAI's
 * {@code error} object with type {@value #QUOTA_ERROR_TYPE} and code {@value #QUOTA_ERROR_CODE},
 * so that an OpenAI client tells a spent quota from a rate limit. Its {@code detail} tells what
 * settled calls spent apart from what calls in flight hold ({@code used} counts both; {@code
 * inFlight} the latter).
 *
 * <p>A call whose estimate exceeds the whole limit of an enforced quota of its level ({@link
 * Reason#COST_EXCEEDS_CAPACITY}: no period can ever hold it) names that quota the same way:
 * {@code quota}, {@code unit}, {@code limit}, {@code estimate} (for cost also {@code
 * estimateAmount} and {@code limitAmount}), and OpenAI's quota error.
 */
public class DefaultRateLimitProblemFactory implements RateLimitProblemFactory {

  /** The default {@code type} of 429 problems ({@code ratelimiter.web.problem-type}). */
  public static final URI RATE_LIMITED_TYPE = URI.create("urn:llmratelimiter:problem:rate-limited");

  /** OpenAI's error type of a deny by a quota. */
  public static final String QUOTA_ERROR_TYPE = "insufficient_quota";

  /** The error code of a deny by a quota, in OpenAI's {@code error} object. */
  public static final String QUOTA_ERROR_CODE = "quota_exceeded";

  /** The {@code type} of the 429 of a call whose upstream's capacity is used. */
  public static final URI UPSTREAM_LIMITED_TYPE =
      URI.create("urn:llmratelimiter:problem:upstream-capacity");

  /** The {@code title} of the 429 of a call whose upstream's capacity is used. */
  public static final String UPSTREAM_LIMITED_TITLE = "Upstream capacity exhausted";

  private final URI rateLimitedType;

  /**
   * Creates the factory.
   *
   * @param rateLimitedType the {@code type} of 429 problems
   * @throws IllegalArgumentException if the type is null
   */
  public DefaultRateLimitProblemFactory(URI rateLimitedType) {
    if (rateLimitedType == null) {
      throw new IllegalArgumentException("rateLimitedType must not be null");
    }
    this.rateLimitedType = rateLimitedType;
  }

  @Override
  public RateLimitProblem rateLimited(RateLimitOutcome outcome, @Nullable String path) {
    Decision d = outcome.decision();
    String policy = outcome.policy().name();
    io.github.llmratelimiter.core.QuotaStatus quota = outcome.exceededQuota();
    if (quota != null) {
      return quotaExceeded(outcome, quota, path);
    }
    QuotaLimit tooSmall = quotaBelowEstimate(outcome);
    String detail = "Rate limit exceeded for policy '" + policy + "' (" + d.reason() + " on level '"
        + d.level() + "'). " + (d.retryable()
            ? "Retry after " + d.retryAfterMs() + " ms."
            : "Waiting will not clear this limit (" + whyFinal(outcome, tooSmall)
                + "): do not retry.");
    RateLimitProblem problem = problem(429, detail, path).withType(rateLimitedType)
        .with("reason", d.reason().name())
        .with("policy", policy)
        .with("level", d.level())
        .with("retryable", d.retryable());
    if (d.retryable()) {
      problem = problem.with("retryAfterMs", d.retryAfterMs());
    }
    if (outcome.reservation() != null
        && outcome.levels().stream().anyMatch(b -> b.modelTokens() != null)) {
      problem = problem.with("estimatedModelTokens", outcome.reservation().estimate());
    }
    if (tooSmall != null) { // a call no period of this quota can ever hold
      long estimate = tooSmall.unit().amount(outcome.reservation().estimated());
      problem = problem.with("quota", tooSmall.name())
          .with("unit", tooSmall.unit().name().toLowerCase(java.util.Locale.ROOT))
          .with("limit", tooSmall.limit())
          .with("estimate", estimate);
      if (tooSmall.unit() == QuotaUnit.COST) {
        problem = problem.with("estimateAmount", tooSmall.unit().format(estimate))
            .with("limitAmount", tooSmall.unit().format(tooSmall.limit()));
      }
      problem = problem.withOpenAiError(QUOTA_ERROR_TYPE, null, QUOTA_ERROR_CODE);
    }
    return problem;
  }

  /**
   * The first enforced quota of the deciding level whose whole limit is below the call's estimate,
   * when that is why the call was refused ({@link Reason#COST_EXCEEDS_CAPACITY}); else {@code null}.
   */
  private static @Nullable QuotaLimit quotaBelowEstimate(RateLimitOutcome outcome) {
    Reservation r = outcome.reservation();
    if (outcome.decision().reason() != Reason.COST_EXCEEDS_CAPACITY || r == null) {
      return null;
    }
    for (QuotaLimit q : outcome.decidingBudget().quotas()) {
      if (q.enforce() && q.unit().amount(r.estimated()) > q.limit()) {
        return q;
      }
    }
    return null;
  }

  /** The 429 of a call its upstream denied: the provider's capacity, not the caller's budget. */
  static RateLimitProblem upstreamProblem(RateLimitOutcome outcome, @Nullable String path) {
    Decision d = outcome.decision();
    String upstream = outcome.upstream() == null ? d.level() : outcome.upstream().name();
    String detail = "The provider capacity of upstream '" + upstream + "' is used for now (by"
        + " every caller, not by this caller's own limits); retry after " + d.retryAfterMs()
        + " ms.";
    RateLimitProblem problem = RateLimitProblem.of(429, detail, path)
        .withType(UPSTREAM_LIMITED_TYPE);
    problem = new RateLimitProblem(problem.status(), problem.type(), UPSTREAM_LIMITED_TITLE,
        problem.detail(), problem.instance(), problem.members());
    return problem.with("reason", d.reason().name())
        .with("policy", outcome.policy().name())
        .with("upstream", upstream)
        .with("retryable", d.retryable())
        .with("retryAfterMs", d.retryAfterMs());
  }

  /** The 429 of a call a quota denied. */
  private RateLimitProblem quotaExceeded(RateLimitOutcome outcome,
      io.github.llmratelimiter.core.QuotaStatus quota, @Nullable String path) {
    Decision d = outcome.decision();
    String policy = outcome.policy().name();
    String unit = quota.quota().unit().name().toLowerCase(java.util.Locale.ROOT);
    String period = quota.quota().period().name().toLowerCase(java.util.Locale.ROOT);
    java.time.Instant end = java.time.Instant.ofEpochMilli(quota.periodEndMs());
    boolean money = quota.quota().unit() == io.github.llmratelimiter.core.QuotaUnit.COST;
    String used = quota.quota().unit().format(quota.used());
    String limit = quota.quota().unit().format(quota.quota().limit());
    // a deny that only the estimates of calls in flight cause waits for them, not for the period
    boolean inFlight = quota.pending() > 0 && d.retryAfterMs() <= 1_000;
    String detail = inFlight
        ? "Quota '" + quota.quota().name() + "' of policy '" + policy + "' has no room for this"
            + " call while calls in flight hold " + quota.quota().unit().format(quota.pending())
            + " of it (" + used + " of " + limit + " with them): retry after " + d.retryAfterMs()
            + " ms."
        : "Quota '" + quota.quota().name() + "' of policy '" + policy + "' is spent for this "
            + period + " (" + spent(quota) + " of " + limit + "). It resets at " + end
            + ": retry after " + d.retryAfterMs() + " ms.";
    RateLimitProblem problem = problem(429, detail, path).withType(rateLimitedType)
        .with("reason", d.reason().name())
        .with("policy", policy)
        .with("level", d.level())
        .with("retryable", d.retryable())
        .with("retryAfterMs", d.retryAfterMs())
        .with("quota", quota.quota().name())
        .with("unit", unit)
        .with("limit", quota.quota().limit())
        .with("used", quota.used())
        .with("inFlight", quota.pending())
        .with("periodEnd", end.toString());
    if (money) { // micro-units, and the amounts of the currency as exact decimals
      problem = problem.with("usedAmount", used).with("limitAmount", limit);
    }
    return problem.withOpenAiError(QUOTA_ERROR_TYPE, null, QUOTA_ERROR_CODE);
  }

  /**
   * What a quota's settled calls used, and what calls in flight hold of it on top when they do
   * (their estimates count against the quota but are not spent).
   */
  private static String spent(io.github.llmratelimiter.core.QuotaStatus quota) {
    QuotaUnit unit = quota.quota().unit();
    String settled = unit.format(quota.settled());
    return quota.pending() == 0 ? settled
        : settled + " spent and " + unit.format(quota.pending()) + " held by calls in flight";
  }

  /** Why a deny that waiting cannot clear is final; {@code quota}: the quota below its estimate. */
  private static String whyFinal(RateLimitOutcome outcome, @Nullable QuotaLimit quota) {
    Reservation r = outcome.reservation();
    if (outcome.decision().reason() != Reason.COST_EXCEEDS_CAPACITY) {
      return "the bucket does not refill";
    }
    if (r != null && !outcome.decidingBudget().fitsModelTokens(r.estimate())) {
      return "the call's estimate of " + r.estimate()
          + " model tokens exceeds the model-token limit of " + outcome.decidingBudget().modelTokens().limit();
    }
    Budget deciding = outcome.decidingBudget();
    if (quota != null) {
      QuotaUnit unit = quota.unit();
      return "the call's estimate of " + unit.format(unit.amount(r.estimated())) + " exceeds the"
          + " whole limit of " + unit.format(quota.limit()) + " of quota '" + quota.name()
          + "' of level '" + deciding.name() + "'";
    }
    if (r != null && !deciding.fitsQuotas(r.estimated())
        || deciding.bucket() == null && !deciding.quotas().isEmpty()) {
      return "the call's estimate exceeds the whole limit of a quota of level '"
          + deciding.name() + "'";
    }
    return "the call costs more tokens than the bucket can hold";
  }

  @Override
  public RateLimitProblem missingApiKey(@Nullable String path) {
    return problem(401,
        "The request carries no API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'.",
        path);
  }

  @Override
  public RateLimitProblem invalidRequest(
      InvalidRateLimitRequestException exception, @Nullable String path) {
    return problem(400, exception.getMessage(), path);
  }

  /** {@inheritDoc} This one also carries {@code maxBodyBytes}, the limit the body passed. */
  @Override
  public RateLimitProblem bodyTooLarge(RequestBodyTooLargeException exception, @Nullable String path) {
    return problem(413, exception.getMessage(), path).with("maxBodyBytes", exception.limitBytes());
  }

  @Override
  public RateLimitProblem storeUnavailable(
      RateLimitStoreUnavailableException exception, @Nullable String path) {
    RateLimitProblem problem = problem(503,
        "The rate limiter cannot decide right now; the request was not served.", path)
        .with("policy", exception.policy());
    if (exception.retryAfterMs() > 0) {
      problem = problem.with("retryAfterMs", exception.retryAfterMs());
    }
    return problem;
  }

  /**
   * Returns a problem with the status's reason phrase as title and the request path as instance.
   *
   * @param status the status
   * @param detail the detail
   * @param path the request's path, or {@code null}
   * @return the problem
   */
  protected RateLimitProblem problem(int status, @Nullable String detail, @Nullable String path) {
    return RateLimitProblem.of(status, detail, path);
  }
}
