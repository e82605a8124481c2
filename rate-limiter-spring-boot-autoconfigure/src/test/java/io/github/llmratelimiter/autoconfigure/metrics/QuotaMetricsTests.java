package io.github.llmratelimiter.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.StoreFailure;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Quota denies, charges, thresholds and shadow denies are counted by policy, never by key. */
class QuotaMetricsTests {

  private static final String KEY = "sk-quota-metrics-0123456789";

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final RateLimitStore store = RateLimitStore.inMemory(new ManualTicker(),
      InstantSource.fixed(Instant.parse("2026-01-05T10:00:00Z")), 100,
      task -> new CompletableFuture<>());
  private final RateLimitEnforcer enforcer;

  QuotaMetricsTests() {
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null,
            null, null, List.of(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 2, QuotaPeriod.DAY)
                .withThresholds(50, 100),
                QuotaLimit.of("tokens", QuotaUnit.TOKENS, 1_000_000, QuotaPeriod.MONTH)), null))
        .policy("trial", KeyScope.API_KEY, new Budget("trial", WindowLimit.perMinute(1), null))
        .policy("per-model", KeyScope.API_KEY_AND_MODEL, new Budget("per-model",
            WindowLimit.perMinute(60), null, null, null,
            List.of(QuotaLimit.of("model-daily", QuotaUnit.REQUESTS, 1000, QuotaPeriod.DAY)), null),
            java.util.Map.of(), "default")
        .enforce("trial", false)
        .build();
    RateLimitMetrics metrics = new RateLimitMetrics(registry, store, policies);
    enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY, () -> List.of(metrics));
  }

  @AfterEach
  void close() {
    store.close();
  }

  private double count(String name, String... tags) {
    return registry.get(name).tags(tags).counter().count();
  }

  @Test
  void quotaDeniesChargesAndThresholdsAreCountedOnceEach() {
    RateLimitKey key = RateLimitKey.of(KEY, null);
    RateLimitOutcome first = enforcer.acquire(null, key, 1, () -> 30);
    // refunded: its request is given back, so the next call is admitted
    enforcer.acquire(null, key, 1, () -> 30).modelTokens().settleUsage(null, true);
    assertThat(enforcer.acquire(null, key, 1, () -> 30).decision().allowed()).isTrue();
    RateLimitOutcome denied = enforcer.acquire(null, key, 1, () -> 30);
    assertThat(denied.decision().denied()).isTrue();
    first.modelTokens().settleUsage(ModelUsage.of(10, 15, 0), false);

    assertThat(count(RateLimitMetrics.QUOTA_DENIALS, "policy", "default", "unit", "requests"))
        .isEqualTo(1);
    assertThat(count(RateLimitMetrics.QUOTA_THRESHOLDS, "policy", "default", "quota", "daily",
        "threshold", "50")).isEqualTo(1);
    assertThat(count(RateLimitMetrics.QUOTA_THRESHOLDS, "policy", "default", "quota", "daily",
        "threshold", "100")).isEqualTo(1);
    // the refunded call counts nothing, the unsettled one nothing yet; the settled one its
    // request and its 25 tokens
    assertThat(count(RateLimitMetrics.QUOTA_CHARGES, "policy", "default", "unit", "requests"))
        .isEqualTo(1);
    assertThat(count(RateLimitMetrics.QUOTA_CHARGES, "policy", "default", "unit", "tokens"))
        .isEqualTo(25);
    assertThat(registry.find(RateLimitMetrics.QUOTA_CHARGES).tag("unit", "cost").counter()).isNull();
    assertNoKeyInTags();
  }

  @Test
  void aUnitIsChargedOncePerSettledCallHoweverManyLevelsHaveAQuotaOfIt() {
    // two levels (the parent's quotas and the policy's own), each with a quota of requests
    for (int i = 1; i <= 2; i++) {
      RateLimitOutcome o = enforcer.acquire("per-model", RateLimitKey.of(KEY, "gpt-4o"), 1, () -> 30);
      assertThat(o.decision().allowed()).isTrue();
      o.modelTokens().settleUsage(ModelUsage.of(10, 5 * i, 0), false);
      assertThat(count(RateLimitMetrics.QUOTA_CHARGES, "policy", "per-model", "unit", "requests"))
          .isEqualTo(i);
    }
    assertThat(count(RateLimitMetrics.QUOTA_CHARGES, "policy", "per-model", "unit", "tokens"))
        .isEqualTo(15 + 20);
    assertThat(registry.find(RateLimitMetrics.QUOTA_CHARGES).tag("policy", "default").counter())
        .isNull();
    assertNoKeyInTags();
  }

  @Test
  void aCallAdmittedInShadowModeIsCountedWithTheReasonItWouldHaveBeenDenied() {
    RateLimitKey key = RateLimitKey.of(KEY, null);
    enforcer.acquire("trial", key, 1);
    assertThat(enforcer.acquire("trial", key, 1).wouldHaveDenied()).isTrue();
    enforcer.acquire("trial", key, 1);
    assertThat(count(RateLimitMetrics.SHADOW_DENIALS, "policy", "trial", "reason", "RPM_LIMIT"))
        .isEqualTo(2);
    assertThat(count(RateLimitMetrics.DECISIONS, "policy", "trial", "result", "allowed",
        "reason", "OK")).isEqualTo(3);
    assertNoKeyInTags();
  }

  private void assertNoKeyInTags() {
    for (Meter m : registry.getMeters()) {
      for (Tag t : m.getId().getTags()) {
        assertThat(t.getValue()).doesNotContain(KEY).doesNotContain("0123456789");
      }
    }
  }
}
