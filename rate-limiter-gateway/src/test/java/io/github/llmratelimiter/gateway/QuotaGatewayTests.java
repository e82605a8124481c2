package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.MaintenanceScheduler;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The enforcer reserves quotas with a call's estimated requests, tokens and cost, settles them with
 * the priced usage, admits what a policy in shadow mode would deny and reports it.
 */
class QuotaGatewayTests {

  private static final String KEY = "sk-quota-gateway-0123456789";
  private static final Instant NOON = Instant.parse("2026-06-15T12:00:00Z");

  private final ManualTicker ticker = new ManualTicker();
  private final RateLimitStore store = RateLimitStore.inMemory(ticker, InstantSource.fixed(NOON),
      1000, (MaintenanceScheduler) task -> new CompletableFuture<>());
  private final List<Consumption> settled = new ArrayList<>();
  private final RateLimitEnforcer enforcer;

  QuotaGatewayTests() {
    QuotaLimit spend = QuotaLimit.of("spend", QuotaUnit.COST, 1_000_000, QuotaPeriod.DAY);
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null))
        .policy("paid", KeyScope.API_KEY, new Budget("paid", WindowLimit.perMinute(60), null, null,
            null, List.of(spend), null))
        .policy("trial", KeyScope.API_KEY, new Budget("trial", WindowLimit.perMinute(1), null))
        .enforce("trial", false)
        .policy("soft", KeyScope.API_KEY, new Budget("soft", WindowLimit.perMinute(60), null, null,
            null, List.of(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 1, QuotaPeriod.DAY)
                .enforced(false)), null))
        .plan("metered", "default", new Budget("default", WindowLimit.perMinute(60), null, null,
            null, List.of(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 2, QuotaPeriod.DAY)), null),
            Map.of())
        .prices(ModelPrices.of(Map.of("m", new ModelPrices.Price(1_000_000, 4_000_000, 500_000)),
            null))
        .build();
    enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY,
        () -> List.of(new RateLimitObserver() {
          @Override
          public void onDecision(RateLimitOutcome outcome, long nanos) {}

          @Override
          public void onSettle(String policy, Reservation reservation, Consumption actual) {
            settled.add(actual);
          }
        }), RateLimitPlanResolver.fixed("metered"));
  }

  @AfterEach
  void close() {
    store.close();
  }

  private long used(String policy) {
    Budget b = enforcer.policies().policy(policy).levels().get(0).budget();
    return store.administration().orElseThrow().quotas(b, KEY).get(0).used();
  }

  @Test
  void aCostQuotaReservesTheEstimateAtTheHighestPriceAndSettlesThePricedUsage() {
    RateLimitOutcome outcome = enforcer.acquire("paid", RateLimitKey.of(KEY, "m"), 1, () -> 100);
    assertThat(outcome.reservation().estimatedSpend()).isEqualTo(400);
    assertThat(used("paid")).isEqualTo(400);
    assertThat(outcome.modelTokens().settleUsage(ModelUsage.of(1000, 10, 600), false)).isTrue();
    // 400 x 1 + 600 x 0.5 + 10 x 4 = 740
    assertThat(used("paid")).isEqualTo(740);
    assertThat(settled).containsExactly(Consumption.ofCall(1010, 740));
    assertThat(outcome.modelTokens().refund()).isFalse();
    assertThat(used("paid")).isEqualTo(740);
  }

  @Test
  void aFailedCallIsRefundedAndACallWithoutUsageKeepsItsEstimate() {
    RateLimitKey key = RateLimitKey.of(KEY, "m");
    enforcer.acquire("paid", key, 1, () -> 100).modelTokens().settleUsage(null, true);
    assertThat(used("paid")).isZero();
    enforcer.acquire("paid", key, 1, () -> 100).modelTokens().settleUsage(null, false);
    assertThat(used("paid")).isEqualTo(400);
    assertThat(settled).containsExactly(Consumption.NONE, Consumption.ofCall(100, 400));
  }

  @Test
  void aPolicyInShadowModeAdmitsWhatItsLimitsDenyAndSaysWhy() {
    RateLimitKey key = RateLimitKey.of(KEY, null);
    RateLimitOutcome first = enforcer.acquire("trial", key, 1);
    assertThat(first.wouldHaveDenied()).isFalse();
    RateLimitOutcome second = enforcer.acquire("trial", key, 1);
    assertThat(second.decision().allowed()).isTrue();
    assertThat(second.wouldHaveDenied()).isTrue();
    assertThat(second.shadowDeny().reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(RateLimitHeaders.of(second)).extracting(ResponseHeader::name)
        .contains(RateLimitHeaders.POLICY, RateLimitHeaders.RATE_LIMIT)
        .doesNotContain(RateLimitHeaders.RETRY_AFTER);
  }

  @Test
  void aShadowQuotaPastItsLimitCountsAndReportsTheDenyItWouldHaveBeen() {
    RateLimitKey key = RateLimitKey.of(KEY, null);
    assertThat(enforcer.acquire("soft", key, 1).wouldHaveDenied()).isFalse();
    RateLimitOutcome over = enforcer.acquire("soft", key, 1);
    assertThat(over.decision().allowed()).isTrue();
    assertThat(over.shadowDeny().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(over.shadowDeny().retryAfterMs()).isEqualTo(12 * 3_600_000L);
    assertThat(over.exceededQuota().quota().name()).isEqualTo("daily");
    assertThat(used("soft")).isEqualTo(2);
  }

  @Test
  void aPlanMayCarryAQuotaItsDefaultsLackAndItsDenyRendersAQuotaProblem() {
    RateLimitKey key = RateLimitKey.of(KEY, null);
    assertThat(enforcer.policies().policy(null).hasQuotas()).isTrue();
    enforcer.acquire(null, key, 1);
    enforcer.acquire(null, key, 1);
    RateLimitOutcome denied = enforcer.acquire(null, key, 1);
    assertThat(denied.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(denied.decision().retryAfterMs()).isEqualTo(12 * 3_600_000L);
    RateLimitProblem problem = new DefaultRateLimitProblemFactory(
        DefaultRateLimitProblemFactory.RATE_LIMITED_TYPE).rateLimited(denied, "/v1/chat");
    assertThat(problem.members()).containsEntry("quota", "daily").containsEntry("unit", "requests")
        .containsEntry("limit", 2L).containsEntry("used", 2L)
        .containsEntry("periodEnd", "2026-06-16T00:00:00Z");
    assertThat(RateLimitHeaders.of(denied)).contains(
        new ResponseHeader(RateLimitHeaders.RETRY_AFTER, "43200"),
        new ResponseHeader(RateLimitHeaders.POLICY,
            "\"default\";q=60;w=60, \"default/daily\";q=2;w=86400"));
    assertThatThrownBy(() -> RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null))
        .enforce("missing", false).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'missing'");
  }

  @Test
  void aQuotaSpentForItsPeriodTellsWhatSettledCallsSpentApartFromWhatCallsInFlightHold() {
    RateLimitKey key = RateLimitKey.of(KEY, "m");
    // 200,000 completion tokens at 4 micro-units: 800,000 settled
    assertThat(enforcer.acquire("paid", key, 1, () -> 200_000).modelTokens()
        .settleUsage(ModelUsage.of(0, 200_000, 0), false)).isTrue();
    // in flight: 25,000 x 4 = 100,000
    assertThat(enforcer.acquire("paid", key, 1, () -> 25_000).decision().allowed()).isTrue();
    // 60,000 x 4 = 240,000 does not fit what settled calls left (200,000): until midnight
    RateLimitOutcome denied = enforcer.acquire("paid", key, 1, () -> 60_000);
    assertThat(denied.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(denied.decision().retryAfterMs()).isEqualTo(12 * 3_600_000L);
    RateLimitProblem problem = new DefaultRateLimitProblemFactory(
        DefaultRateLimitProblemFactory.RATE_LIMITED_TYPE).rateLimited(denied, "/v1/chat");
    assertThat(problem.detail()).contains("is spent for this day (0.8 spent and 0.1 held by calls in"
        + " flight of 1)");
    assertThat(problem.members()).containsEntry("used", 900_000L)
        .containsEntry("inFlight", 100_000L);
  }

  @Test
  void anEstimateAboveAWholeQuotaIsRefusedNamingTheQuotaAsOpenAiNamesASpentQuota() {
    // 300,000 model tokens at the highest price, 4 micro-units: 1,200,000 of a 1,000,000 day
    RateLimitOutcome refused = enforcer.acquire("paid", RateLimitKey.of(KEY, "m"), 1,
        () -> 300_000);
    assertThat(refused.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(refused.decision().retryable()).isFalse();
    RateLimitProblem problem = new DefaultRateLimitProblemFactory(
        DefaultRateLimitProblemFactory.RATE_LIMITED_TYPE).rateLimited(refused, "/v1/chat");
    assertThat(problem.detail()).contains("the call's estimate of 1.2 exceeds the whole limit of 1"
        + " of quota 'spend' of level 'paid'");
    assertThat(problem.members()).containsEntry("reason", "COST_EXCEEDS_CAPACITY")
        .containsEntry("quota", "spend").containsEntry("unit", "cost")
        .containsEntry("limit", 1_000_000L).containsEntry("estimate", 1_200_000L)
        .containsEntry("estimateAmount", "1.2").containsEntry("limitAmount", "1");
    assertThat(problem.members().get("error")).asString().contains("insufficient_quota");
    assertThat(used("paid")).isZero();
    // its RateLimit-Policy lists the quota as an admitted call's does: its limit does not depend
    // on what was used, and its period is the day of the refusal
    String policy = policy(refused);
    assertThat(policy).contains("\"paid/spend\";q=1000000").contains(";w=86400");
    assertThat(policy).isEqualTo(policy(enforcer.acquire("paid", RateLimitKey.of(KEY, "m"), 1,
        () -> 1)));
  }

  @Test
  void aRefusedEstimatesPolicyTellsTheQuotasPeriodOfTheDayOfTheRefusalAcrossAClockChange() {
    // 2026-10-25 in Paris has 25 hours (the clocks go back at 03:00)
    QuotaLimit daily = new QuotaLimit("daily", QuotaUnit.TOKENS, 1_000, QuotaPeriod.DAY,
        java.time.ZoneId.of("Europe/Paris"), List.of(), true);
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null,
            null, null, List.of(daily), null))
        .build();
    try (RateLimitStore paris = RateLimitStore.inMemory(ticker,
        InstantSource.fixed(Instant.parse("2026-10-25T20:00:00Z")), 1000,
        (MaintenanceScheduler) task -> new CompletableFuture<>())) {
      RateLimitEnforcer onParis = new RateLimitEnforcer(paris, policies, StoreFailure.DENY,
          List::of);
      RateLimitOutcome refused = onParis.acquire(null, RateLimitKey.of(KEY, "m"), 1, () -> 1_001);
      assertThat(refused.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
      assertThat(policy(refused)).isEqualTo(
          "\"default\";q=60;w=60, \"default/daily\";q=1000;qu=\"tokens\";w=90000");
    }
  }

  private static String policy(RateLimitOutcome outcome) {
    return RateLimitHeaders.of(outcome).stream()
        .filter(h -> h.name().equals(RateLimitHeaders.POLICY)).findFirst().orElseThrow().value();
  }
}
