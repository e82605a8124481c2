package io.github.llmratelimiter.autoconfigure.metrics;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * Records decisions: the counter {@value #DECISIONS} tagged {@code policy}, {@code plan} (the plan
 * the call was decided under, one of the configured plans: a bounded set), {@code result} ({@code
 * allowed} / {@code denied}) and {@code reason}; the timer {@value #LATENCY} tagged {@code policy};
 * and, when the store offers {@linkplain RateLimitStore#administration() administration}, the gauge
 * {@value #TRACKED_KEYS} tagged {@code budget}. For tokens-per-window budgets: the
 * counter {@value #MODEL_TOKENS} (model tokens the settled calls used) tagged {@code policy}, and
 * the distribution summary {@value #RECONCILE_DELTA} of {@code |estimate - actual|} tagged {@code
 * policy} and {@code direction} ({@code over}: refunded, {@code under}: charged extra, {@code
 * exact}). For quotas: the counter {@value #QUOTA_DENIALS} (calls a quota denied) tagged {@code
 * policy} and {@code unit}; the counter {@value #QUOTA_CHARGES} (what the settled calls consumed of
 * their quotas: requests, model tokens, or cost in micro-units) tagged {@code policy} and {@code
 * unit}; the counter {@value #QUOTA_THRESHOLDS} (thresholds first reached in a period) tagged
 * {@code policy}, {@code quota} and {@code threshold}; and the counter {@value #SHADOW_DENIALS}
 * (calls admitted only because their policy or quota is in shadow mode) tagged {@code policy} and
 * {@code reason}. For upstreams ({@code ratelimiter.upstreams}), tagged {@code upstream} (a
 * configured name): the gauges {@value #UPSTREAM_REQUESTS_REMAINING} and {@value
 * #UPSTREAM_TOKENS_REMAINING} (what the provider's last report left, as counted down by the calls
 * admitted since; NaN while no report holds), {@value #UPSTREAM_IN_FLIGHT} (calls holding one of
 * its slots) and {@value #UPSTREAM_CLOSED} (seconds it stays closed by the provider), each read from
 * the store's {@link RateLimitStore#upstreamStatus} when scraped (NaN when the store cannot answer);
 * and the counter {@value #UPSTREAM_PROVIDER_429} of the provider's 429 responses seen. Tag values
 * come from the configuration and the decision only, never from a key.
 *
 * <p>Each meter is registered on its first use and then kept, so that a decision looks nothing up
 * in the registry. A meter removed from the registry afterwards (for example by {@code
 * MeterRegistry.clear()}) therefore goes on counting unseen until the application restarts.
 */
final class RateLimitMetrics implements RateLimitObserver {

  static final String DECISIONS = "ratelimiter.decisions";
  static final String LATENCY = "ratelimiter.decision.latency";
  static final String TRACKED_KEYS = "ratelimiter.keys.tracked";
  static final String STORE_UNAVAILABLE = "STORE_UNAVAILABLE";
  static final String MODEL_TOKENS = "ratelimiter.model.tokens";
  static final String RECONCILE_DELTA = "ratelimiter.model.tokens.reconcile.delta";
  static final String QUOTA_DENIALS = "ratelimiter.quota.denials";
  static final String QUOTA_CHARGES = "ratelimiter.quota.charges";
  static final String QUOTA_THRESHOLDS = "ratelimiter.quota.thresholds";
  static final String SHADOW_DENIALS = "ratelimiter.shadow.denials";
  static final String UPSTREAM_REQUESTS_REMAINING = "ratelimiter.upstream.requests.remaining";
  static final String UPSTREAM_TOKENS_REMAINING = "ratelimiter.upstream.tokens.remaining";
  static final String UPSTREAM_IN_FLIGHT = "ratelimiter.upstream.in.flight";
  static final String UPSTREAM_CLOSED = "ratelimiter.upstream.closed";
  static final String UPSTREAM_PROVIDER_429 = "ratelimiter.upstream.provider.rejections";

  private static final Reason[] REASONS = Reason.values();
  /** Slots per policy: allowed and denied, for each reason and for a degraded outcome. */
  private static final int SLOTS = 2 * (REASONS.length + 1);

  private final MeterRegistry registry;
  /** Every meter of a policy, registered on first use and then reused: no lookup by tags per call. */
  private final Map<String, PolicyMeters> meters = new ConcurrentHashMap<>();

  RateLimitMetrics(MeterRegistry registry, RateLimitStore store, RateLimitPolicies policies) {
    this(registry, store, policies, UpstreamRoutes.NONE);
  }

  RateLimitMetrics(MeterRegistry registry, RateLimitStore store, RateLimitPolicies policies,
      UpstreamRoutes upstreams) {
    this.registry = registry;
    for (Upstream u : upstreams.upstreams().values()) {
      upstreamGauge(UPSTREAM_REQUESTS_REMAINING, "Requests the provider's last report left an"
          + " upstream", store, u, s -> s.reportedRequestsRemaining());
      upstreamGauge(UPSTREAM_TOKENS_REMAINING, "Model tokens the provider's last report left an"
          + " upstream", store, u, s -> s.reportedTokensRemaining());
      upstreamGauge(UPSTREAM_IN_FLIGHT, "Calls in flight on an upstream", store, u,
          UpstreamStatus::inFlight);
      upstreamGauge(UPSTREAM_CLOSED, "Seconds an upstream stays closed by its provider", store, u,
          s -> s.closedForMs() / 1000.0);
    }
    StoreAdministration admin = store.administration().orElse(null);
    for (Budget budget : admin == null ? List.<Budget>of() : policies.allBudgets()) {
      Gauge.builder(TRACKED_KEYS, store, s -> admin.trackedKeys(budget))
          .description("Keys the rate-limit store tracks for a budget")
          .tag("budget", budget.name())
          .register(registry);
    }
  }

  @Override
  public void onDecision(RateLimitOutcome outcome, long nanos) {
    Decision d = outcome.decision();
    PolicyMeters m = meters(outcome.policy().name());
    int slot = (outcome.degraded() ? REASONS.length : d.reason().ordinal()) * 2 + (d.allowed() ? 0 : 1);
    String plan = outcome.plan();
    AtomicReferenceArray<Counter> decisions = m.decisions.get(plan);
    if (decisions == null) {
      decisions = m.decisions.computeIfAbsent(plan, p -> new AtomicReferenceArray<>(SLOTS));
    }
    Counter counter = decisions.get(slot);
    if (counter == null) {
      String reason = outcome.degraded() ? STORE_UNAVAILABLE : d.reason().name();
      counter = Counter.builder(DECISIONS)
          .description("Rate-limit decisions")
          .tag("policy", m.policy)
          .tag("plan", plan)
          .tag("result", d.allowed() ? "allowed" : "denied")
          .tag("reason", reason)
          .register(registry);
      decisions.set(slot, counter); // a race registers the same meter: the registry returns it
    }
    counter.increment();
    m.latency.record(nanos, TimeUnit.NANOSECONDS);
    if (outcome.reservation() != null && !outcome.quotas().isEmpty()) {
      quotas(outcome, m);
    }
    Decision shadow = outcome.shadowDeny();
    if (shadow != null) {
      counter(SHADOW_DENIALS, "Calls admitted only because their policy or quota is in shadow mode",
          null, "policy", m.policy, "reason", shadow.reason().name()).increment();
    }
  }

  /** The quota meters of a decision: a deny by a quota, and the thresholds it crossed. */
  private void quotas(RateLimitOutcome outcome, PolicyMeters m) {
    if (outcome.decision().denied()) {
      QuotaStatus denying = outcome.exceededQuota();
      if (denying != null) {
        counter(QUOTA_DENIALS, "Calls a quota denied", null, "policy", m.policy, "unit",
            unit(denying.quota().unit())).increment();
      }
    }
    for (QuotaStatus s : outcome.quotas()) {
      for (int threshold : s.crossed()) {
        counter(QUOTA_THRESHOLDS, "Quota thresholds first reached in a period", null, "policy",
            m.policy, "quota", s.quota().name(), "threshold", Integer.toString(threshold))
            .increment();
      }
    }
  }

  /** A gauge of an upstream's status, read from the store when scraped; NaN when it has none. */
  private void upstreamGauge(String name, String description, RateLimitStore store,
      Upstream upstream, java.util.function.Function<UpstreamStatus, @Nullable Number> figure) {
    Gauge.builder(name, store, s -> {
      try {
        Number n = figure.apply(s.upstreamStatus(upstream));
        return n == null ? Double.NaN : n.doubleValue();
      } catch (RuntimeException e) { // a store that cannot answer now
        return Double.NaN;
      }
    }).description(description).tag("upstream", upstream.name()).register(registry);
  }

  @Override
  public void onProviderReport(Upstream upstream, ProviderReport report, int status) {
    if (status == 429) {
      counter(UPSTREAM_PROVIDER_429, "429 responses of an upstream's provider", null, "upstream",
          upstream.name()).increment();
    }
  }

  @Override
  public void onSettle(String policy, Reservation reservation, Consumption actual) {
    PolicyMeters m = null;
    int seen = 0; // the units already counted, one bit each: a unit counts once per call
    for (Budget level : reservation.levels()) {
      for (QuotaLimit q : level.quotas()) {
        QuotaUnit unit = q.unit();
        int bit = 1 << unit.ordinal();
        if ((seen & bit) != 0) {
          continue;
        }
        seen |= bit;
        long amount = unit.amount(actual);
        if (amount > 0) {
          m = m != null ? m : meters(policy);
          m.quotaCharges(unit).increment(amount);
        }
      }
    }
  }

  private static String unit(QuotaUnit unit) {
    return unit.name().toLowerCase(java.util.Locale.ROOT);
  }

  /**
   * A counter of rare events (quota denies, thresholds, shadow denies), found in the registry by
   * its tags: the registry returns the one registered.
   */
  private Counter counter(String name, String description, @Nullable String baseUnit,
      String... tags) {
    Counter.Builder b = Counter.builder(name).description(description).tags(tags);
    return (baseUnit == null ? b : b.baseUnit(baseUnit)).register(registry);
  }

  @Override
  public void onReconcile(String policy, long estimate, long actual) {
    PolicyMeters m = meters(policy);
    m.modelTokens().increment(actual);
    int direction = estimate > actual ? 0 : estimate < actual ? 1 : 2;
    DistributionSummary delta = m.deltas.get(direction);
    if (delta == null) {
      delta = DistributionSummary.builder(RECONCILE_DELTA)
          .description("How far model-token estimates were from the usage: |estimate - actual|")
          .baseUnit("tokens")
          .tag("policy", policy)
          .tag("direction", DIRECTIONS[direction])
          .register(registry);
      m.deltas.set(direction, delta);
    }
    delta.record(Math.abs((double) estimate - actual));
  }

  private static final String[] DIRECTIONS = {"over", "under", "exact"};

  private static final QuotaUnit[] UNITS = QuotaUnit.values();

  private PolicyMeters meters(String policy) {
    PolicyMeters m = meters.get(policy);
    return m != null ? m : meters.computeIfAbsent(policy, PolicyMeters::new);
  }

  /** The meters of one policy. */
  private final class PolicyMeters {

    final String policy;
    final Timer latency;
    /** Per plan (the configured plans only: the enforcer maps any other name to the default). */
    final Map<String, AtomicReferenceArray<Counter>> decisions = new ConcurrentHashMap<>();
    final AtomicReferenceArray<DistributionSummary> deltas = new AtomicReferenceArray<>(3);
    private volatile @Nullable Counter modelTokens;
    /** Per quota unit, what settled calls consumed of their quotas. */
    final AtomicReferenceArray<Counter> quotaCharges = new AtomicReferenceArray<>(UNITS.length);

    PolicyMeters(String policy) {
      this.policy = policy;
      this.latency = Timer.builder(LATENCY)
          .description("Time the rate-limit store takes to decide")
          .tag("policy", policy)
          .register(registry);
    }

    Counter quotaCharges(QuotaUnit unit) {
      Counter c = quotaCharges.get(unit.ordinal());
      if (c == null) {
        c = counter(QUOTA_CHARGES, "What settled calls consumed of their quotas (cost in micro-units)",
            null, "policy", policy, "unit", unit(unit));
        quotaCharges.set(unit.ordinal(), c); // a race registers the same meter: the registry returns it
      }
      return c;
    }

    Counter modelTokens() {
      Counter c = modelTokens;
      if (c == null) {
        c = Counter.builder(MODEL_TOKENS)
            .description("Model tokens (prompt and completion) used by calls whose usage was settled")
            .baseUnit("tokens")
            .tag("policy", policy)
            .register(registry);
        modelTokens = c;
      }
      return c;
    }
  }
}
