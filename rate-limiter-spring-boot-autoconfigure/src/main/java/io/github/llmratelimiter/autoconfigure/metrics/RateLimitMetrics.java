package io.github.llmratelimiter.autoconfigure.metrics;

import io.github.llmratelimiter.autoconfigure.RateLimitObserver;
import io.github.llmratelimiter.autoconfigure.RateLimitOutcome;
import io.github.llmratelimiter.autoconfigure.RateLimitPolicies;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.RateLimitStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Records decisions: the counter {@value #DECISIONS} tagged {@code policy}, {@code result} ({@code
 * allowed} / {@code denied}) and {@code reason}; the timer {@value #LATENCY} tagged {@code policy};
 * and the gauge {@value #TRACKED_KEYS} tagged {@code budget}. For tokens-per-window budgets: the
 * counter {@value #MODEL_TOKENS} (model tokens the settled calls used) tagged {@code policy}, and
 * the distribution summary {@value #RECONCILE_DELTA} of {@code |estimate - actual|} tagged {@code
 * policy} and {@code direction} ({@code over}: refunded, {@code under}: charged extra, {@code
 * exact}). Tag values come from the configuration and the decision only, never from a key.
 */
final class RateLimitMetrics implements RateLimitObserver {

  static final String DECISIONS = "ratelimiter.decisions";
  static final String LATENCY = "ratelimiter.decision.latency";
  static final String TRACKED_KEYS = "ratelimiter.keys.tracked";
  static final String STORE_UNAVAILABLE = "STORE_UNAVAILABLE";
  static final String MODEL_TOKENS = "ratelimiter.model.tokens";
  static final String RECONCILE_DELTA = "ratelimiter.model.tokens.reconcile.delta";

  private final MeterRegistry registry;
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();
  private final Map<String, Counter> modelTokens = new ConcurrentHashMap<>();
  private final Map<String, DistributionSummary> deltas = new ConcurrentHashMap<>();

  RateLimitMetrics(MeterRegistry registry, RateLimitStore store, RateLimitPolicies policies) {
    this.registry = registry;
    for (Budget budget : policies.allBudgets()) {
      Gauge.builder(TRACKED_KEYS, store, s -> s.trackedKeys(budget))
          .description("Keys the rate-limit store tracks for a budget")
          .tag("budget", budget.name())
          .register(registry);
    }
  }

  @Override
  public void onDecision(RateLimitOutcome outcome, long nanos) {
    Decision d = outcome.decision();
    String policy = outcome.policy().name();
    String result = d.allowed() ? "allowed" : "denied";
    String reason = outcome.degraded() ? STORE_UNAVAILABLE : d.reason().name();
    counters.computeIfAbsent(policy + '\u0000' + result + '\u0000' + reason,
        k -> Counter.builder(DECISIONS)
            .description("Rate-limit decisions")
            .tag("policy", policy)
            .tag("result", result)
            .tag("reason", reason)
            .register(registry))
        .increment();
    timers.computeIfAbsent(policy,
        p -> Timer.builder(LATENCY)
            .description("Time the rate-limit store takes to decide")
            .tag("policy", p)
            .register(registry))
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void onReconcile(String policy, long estimate, long actual) {
    modelTokens.computeIfAbsent(policy,
        p -> Counter.builder(MODEL_TOKENS)
            .description("Model tokens (prompt and completion) used by calls whose usage was settled")
            .baseUnit("tokens")
            .tag("policy", p)
            .register(registry))
        .increment(actual);
    String direction = estimate > actual ? "over" : estimate < actual ? "under" : "exact";
    deltas.computeIfAbsent(policy + '\u0000' + direction,
        k -> DistributionSummary.builder(RECONCILE_DELTA)
            .description("How far model-token estimates were from the usage: |estimate - actual|")
            .baseUnit("tokens")
            .tag("policy", policy)
            .tag("direction", direction)
            .register(registry))
        .record(Math.abs((double) estimate - actual));
  }
}
