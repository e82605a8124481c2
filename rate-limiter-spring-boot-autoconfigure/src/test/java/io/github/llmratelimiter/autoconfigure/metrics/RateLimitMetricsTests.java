package io.github.llmratelimiter.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Each meter is registered once, on first use, and then reused: the counts are exact, and neither
 * many calls nor concurrent first calls register a meter again.
 */
class RateLimitMetricsTests {

  private static final RateLimitKey KEY = RateLimitKey.of("sk-metrics-0123456789", null);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final List<Meter.Id> added = new ArrayList<>();
  private final RateLimitPolicy policy;
  private final RateLimitMetrics metrics;

  RateLimitMetricsTests() {
    registry.config().onMeterAdded(m -> {
      synchronized (added) {
        added.add(m.getId());
      }
    });
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null))
        .build();
    policy = policies.policy(null);
    metrics = new RateLimitMetrics(registry, RateLimitStore.inMemory(), policies);
  }

  private RateLimitOutcome outcome(Decision d, boolean degraded) {
    return new RateLimitOutcome(policy, KEY, d, policy.budgets(KEY), degraded);
  }

  private double decisions(String result, String reason) {
    return registry.get(RateLimitMetrics.DECISIONS).tag("policy", policy.name())
        .tag("result", result).tag("reason", reason).counter().count();
  }

  @Test
  void manyDecisionsRegisterEachMeterOnceAndCountExactly() {
    int gauges = added.size();
    RateLimitOutcome allowed = outcome(Decision.allow(1, 1, "default"), false);
    RateLimitOutcome denied =
        outcome(Decision.retryableDeny(Reason.RPM_LIMIT, 0, 5, 5, "default"), false);
    RateLimitOutcome degraded = outcome(Decision.allow(0, 0, "default"), true);
    for (int i = 0; i < 1000; i++) {
      metrics.onDecision(allowed, 10);
      metrics.onDecision(denied, 10);
      if (i % 10 == 0) {
        metrics.onDecision(degraded, 10);
      }
      metrics.onReconcile(policy.name(), 10, i % 3 == 0 ? 10 : 7);
    }

    // a timer, three decision counters, the model-token counter, two delta summaries
    assertThat(added.size() - gauges).isEqualTo(7);
    assertThat(decisions("allowed", "OK")).isEqualTo(1000);
    assertThat(decisions("denied", "RPM_LIMIT")).isEqualTo(1000);
    assertThat(decisions("allowed", RateLimitMetrics.STORE_UNAVAILABLE)).isEqualTo(100);
    assertThat(registry.get(RateLimitMetrics.LATENCY).timer().count()).isEqualTo(2100);
    assertThat(registry.get(RateLimitMetrics.MODEL_TOKENS).counter().count())
        .isEqualTo(334 * 10 + 666 * 7);
    assertThat(registry.get(RateLimitMetrics.RECONCILE_DELTA).tag("direction", "exact")
        .summary().count()).isEqualTo(334);
    assertThat(registry.get(RateLimitMetrics.RECONCILE_DELTA).tag("direction", "over")
        .summary().totalAmount()).isEqualTo(666 * 3);
  }

  @Test
  void concurrentFirstDecisionsShareOneCounterAndLoseNoCount() throws Exception {
    RateLimitOutcome allowed = outcome(Decision.allow(1, 1, "default"), false);
    int threads = 4;
    int calls = 10_000;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < calls; i++) {
            metrics.onDecision(allowed, 1);
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : done) {
        f.get(1, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(decisions("allowed", "OK")).isEqualTo((double) threads * calls);
    assertThat(registry.find(RateLimitMetrics.DECISIONS).counters()).hasSize(1);
    assertThat(registry.get(RateLimitMetrics.LATENCY).timer().count()).isEqualTo((long) threads * calls);
  }
}
