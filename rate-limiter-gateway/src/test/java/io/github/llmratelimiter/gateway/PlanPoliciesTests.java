package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Plans resolve to variants of the policies' budgets: the plan's value where it sets one, else the
 * policy's as configured; an unknown plan, policy or model name, or a plan that would change a
 * budget's shape, fails naming the property.
 */
class PlanPoliciesTests {

  private static final RateLimitKey KEY = RateLimitKey.of("sk-plans-0123456789", "gpt-4o");
  private static final RateLimitKey OTHER_MODEL = RateLimitKey.of("sk-plans-0123456789", "gpt-4o-mini");

  private static RateLimitSettings base() {
    PolicySettings perKey = PolicySettings.of(LimitSettings.NONE.withRpm(10L, null));
    PolicySettings chat = new PolicySettings(LimitSettings.NONE.withRpm(5L, null)
        .withBurst(4.0, 1.0).withConcurrency(2L, null), KeyScope.API_KEY_AND_MODEL,
        Map.of("gpt-4o", LimitSettings.NONE.withRpm(3L, null)), "per-key");
    return RateLimitSettings.defaults().withPolicy("per-key", perKey).withPolicy("chat", chat);
  }

  private static RateLimitPolicies withPlans(String defaultPlan, Map<String, PlanSettings> plans) {
    return RateLimitPolicies.from(base().withPlans(defaultPlan, plans));
  }

  private static PlanSettings plan(String policy, LimitSettings limits, Map<String, LimitSettings> models) {
    return new PlanSettings(Map.of(policy, new PolicySettings(limits, null, models, null)));
  }

  private static Map<String, PlanSettings> freeAndPro() {
    Map<String, PlanSettings> plans = new LinkedHashMap<>();
    plans.put("free", PlanSettings.NONE);
    plans.put("pro", plan("chat", LimitSettings.NONE.withRpm(60L, null).withBurst(20.0, null)
        .withConcurrency(8L, Duration.ofMinutes(2)), Map.of("gpt-4o", LimitSettings.NONE.withRpm(30L, null))));
    return plans;
  }

  @Test
  void aPlanOverridesWhatItSetsAndKeepsTheRestAsConfigured() {
    RateLimitPolicies policies = withPlans("free", freeAndPro());
    RateLimitPolicy chat = policies.policy("chat");
    assertThat(policies.plans()).containsExactly("free", "pro");
    assertThat(policies.defaultPlan()).isEqualTo("free");
    // free overrides nothing: the budgets as configured, the very same objects
    assertThat(chat.budgets(KEY, "free")).isEqualTo(chat.budgets(KEY));
    assertThat(chat.budgets(KEY, "free").get(1)).isSameAs(chat.levels().get(1).budgetFor("gpt-4o"));
    List<Budget> pro = chat.budgets(KEY, "pro");
    Budget gpt4o = pro.get(1);
    assertThat(gpt4o.name()).isEqualTo("chat/gpt-4o");
    assertThat(gpt4o.variantOf()).isEqualTo(chat.budgets(KEY).get(1));
    assertThat(gpt4o.window()).isEqualTo(WindowLimit.perMinute(30));
    // the model inherits what the plan sets on its policy: the bucket's capacity, the concurrency
    assertThat(gpt4o.bucket()).isEqualTo(new BucketLimit(20, 1));
    assertThat(gpt4o.concurrency()).isEqualTo(new ConcurrencyLimit(8, Duration.ofMinutes(2)));
    Budget other = chat.budgets(OTHER_MODEL, "pro").get(1);
    assertThat(other.name()).isEqualTo("chat");
    assertThat(other.window()).isEqualTo(WindowLimit.perMinute(60));
    // a policy the plan does not name keeps its limits: the same budget as under free
    assertThat(pro.get(0)).isSameAs(chat.budgets(KEY).get(0));
    assertThat(policies.allBudgets("pro")).hasSameSizeAs(policies.allBudgets());
  }

  @Test
  void aConfiguredModelLimitWinsOverThePlansPolicyLimit() {
    RateLimitPolicies policies = withPlans("free", Map.of("free", PlanSettings.NONE,
        "pro", plan("chat", LimitSettings.NONE.withRpm(60L, null), Map.of())));
    assertThat(policies.policy("chat").budgets(KEY, "pro").get(1).window())
        .isEqualTo(WindowLimit.perMinute(3));
  }

  @Test
  void withoutPlansEveryKeyHasTheDefaultPlanAsConfigured() {
    RateLimitPolicies policies = RateLimitPolicies.from(base());
    assertThat(policies.plans()).containsExactly("default");
    assertThat(policies.policy("chat").budgets(KEY, "default")).isEqualTo(policies.policy("chat").budgets(KEY));
    assertThatThrownBy(() -> policies.policy("chat").budgets(KEY, "pro"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'pro'");
  }

  @Test
  void anUnknownDefaultPlanFailsNamingTheProperty() {
    assertThatThrownBy(() -> withPlans("gold", freeAndPro()))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.default-plan'").hasMessageContaining("'gold'");
    assertThatThrownBy(() -> withPlans("gold", Map.of()))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.default-plan'");
  }

  @Test
  void anUnknownPolicyOrModelInAPlanFailsNamingTheProperty() {
    assertThatThrownBy(() -> withPlans("default",
        Map.of("pro", plan("chta", LimitSettings.NONE.withRpm(60L, null), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chta'");
    assertThatThrownBy(() -> withPlans("default", Map.of("pro", plan("chat", LimitSettings.NONE,
        Map.of("gpt-5", LimitSettings.NONE.withRpm(60L, null))))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chat.models.gpt-5'")
        .hasMessageContaining("[gpt-4o]");
  }

  @Test
  void aPlanThatWouldChangeABudgetsShapeFailsNamingTheProperty() {
    // per-key has no bucket and no model-token limit: a plan cannot add them
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("per-key", LimitSettings.NONE.withBurst(5.0, 1.0), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.per-key.burst.capacity'");
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("per-key", LimitSettings.NONE.withTpm(500L, null), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.per-key.tpm.limit'");
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("per-key", LimitSettings.NONE.withConcurrency(3L, null), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.per-key.concurrency.limit'");
    // a window keeps its length
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("chat", LimitSettings.NONE.withRpm(null, Duration.ofSeconds(30)), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chat.rpm.window'");
    // an invalid number in a plan is named like any other
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("chat", LimitSettings.NONE.withRpm(0L, null), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chat.rpm.limit'");
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("chat", LimitSettings.NONE.withConcurrency(null, Duration.ofDays(2)), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chat.concurrency.lease-timeout'");
  }

  @Test
  void aPlanNameWithABraceOrSlashFailsNamingTheProperty() {
    assertThatThrownBy(() -> withPlans("default", Map.of("a/b", PlanSettings.NONE)))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans'");
  }
}
