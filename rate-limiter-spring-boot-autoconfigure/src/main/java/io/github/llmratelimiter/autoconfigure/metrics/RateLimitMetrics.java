package io.github.llmratelimiter.autoconfigure.metrics;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
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
 * exact}). Tag values come from the configuration and the decision only, never from a key.
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

  private static final Reason[] REASONS = Reason.values();
  /** Slots per policy: allowed and denied, for each reason and for a degraded outcome. */
  private static final int SLOTS = 2 * (REASONS.length + 1);

  private final MeterRegistry registry;
  /** Every meter of a policy, registered on first use and then reused: no lookup by tags per call. */
  private final Map<String, PolicyMeters> meters = new ConcurrentHashMap<>();

  RateLimitMetrics(MeterRegistry registry, RateLimitStore store, RateLimitPolicies policies) {
    this.registry = registry;
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

    PolicyMeters(String policy) {
      this.policy = policy;
      this.latency = Timer.builder(LATENCY)
          .description("Time the rate-limit store takes to decide")
          .tag("policy", policy)
          .register(registry);
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
