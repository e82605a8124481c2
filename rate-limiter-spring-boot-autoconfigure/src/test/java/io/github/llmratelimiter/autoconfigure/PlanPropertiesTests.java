package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Plans resolve to variants of the policies' budgets: the plan's value where it sets one, else the
 * policy's as configured; an unknown plan, policy or model name, or a plan that would change a
 * budget's shape, fails naming the property.
 */
class PlanPropertiesTests {

  private static final RateLimitKey KEY = RateLimitKey.of("sk-plans-0123456789", "gpt-4o");
  private static final RateLimitKey OTHER_MODEL = RateLimitKey.of("sk-plans-0123456789", "gpt-4o-mini");

  private static RateLimiterProperties base() {
    RateLimiterProperties properties = new RateLimiterProperties();
    RateLimiterProperties.Policy perKey = new RateLimiterProperties.Policy();
    perKey.getRpm().setLimit(10L);
    RateLimiterProperties.Policy chat = new RateLimiterProperties.Policy();
    limits(chat, 5L, null).getBurst().setCapacity(4.0);
    chat.getBurst().setRefillPerSecond(1.0);
    chat.getConcurrency().setLimit(2L);
    chat.setScope(KeyScope.API_KEY_AND_MODEL);
    chat.getModels().put("gpt-4o", limits(new RateLimiterProperties.Limits(), 3L, null));
    chat.setParent("per-key");
    properties.getPolicies().put("per-key", perKey);
    properties.getPolicies().put("chat", chat);
    return properties;
  }

  private static <T extends RateLimiterProperties.Limits> T limits(T limits, @Nullable Long rpm,
      @Nullable Duration window) {
    limits.getRpm().setLimit(rpm);
    limits.getRpm().setWindow(window);
    return limits;
  }

  private static RateLimitPolicies translate(RateLimiterProperties properties) {
    return PropertiesTranslation.policies(properties, new RateLimiterWebProperties());
  }

  private static RateLimitPolicies withPlans(String defaultPlan,
      Map<String, RateLimiterProperties.@Nullable Plan> plans) {
    RateLimiterProperties properties = base();
    properties.setDefaultPlan(defaultPlan);
    properties.getPlans().putAll(plans);
    return translate(properties);
  }

  /** A plan that overrides {@code policy} with {@code limits} and its {@code models}. */
  private static RateLimiterProperties.Plan plan(String policy,
      Consumer<RateLimiterProperties.Limits> limits,
      Map<String, Consumer<RateLimiterProperties.Limits>> models) {
    RateLimiterProperties.PlanPolicy override = new RateLimiterProperties.PlanPolicy();
    limits.accept(override);
    models.forEach((model, l) -> {
      RateLimiterProperties.Limits m = new RateLimiterProperties.Limits();
      l.accept(m);
      override.getModels().put(model, m);
    });
    RateLimiterProperties.Plan plan = new RateLimiterProperties.Plan();
    plan.getPolicies().put(policy, override);
    return plan;
  }

  private static Consumer<RateLimiterProperties.Limits> rpm(@Nullable Long limit,
      @Nullable Duration window) {
    return l -> limits(l, limit, window);
  }

  private static final Consumer<RateLimiterProperties.Limits> NONE = l -> { };

  private static Map<String, RateLimiterProperties.@Nullable Plan> freeAndPro() {
    Map<String, RateLimiterProperties.@Nullable Plan> plans = new LinkedHashMap<>();
    plans.put("free", new RateLimiterProperties.Plan());
    plans.put("pro", plan("chat", rpm(60L, null).andThen(l -> {
      l.getBurst().setCapacity(20.0);
      l.getConcurrency().setLimit(8L);
      l.getConcurrency().setLeaseTimeout(Duration.ofMinutes(2));
    }), Map.of("gpt-4o", rpm(30L, null))));
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
    RateLimitPolicies policies = withPlans("free", Map.of("free", new RateLimiterProperties.Plan(),
        "pro", plan("chat", rpm(60L, null), Map.of())));
    assertThat(policies.policy("chat").budgets(KEY, "pro").get(1).window())
        .isEqualTo(WindowLimit.perMinute(3));
  }

  @Test
  void withoutPlansEveryKeyHasTheDefaultPlanAsConfigured() {
    RateLimitPolicies policies = translate(base());
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
        Map.of("pro", plan("chta", rpm(60L, null), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chta'");
    assertThatThrownBy(() -> withPlans("default", Map.of("pro", plan("chat", NONE,
        Map.of("gpt-5", rpm(60L, null))))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chat.models.gpt-5'")
        .hasMessageContaining("[gpt-4o]");
  }

  @Test
  void aPlanThatWouldChangeABudgetsShapeFailsNamingTheProperty() {
    // per-key has no bucket and no model-token limit: a plan cannot add them
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("per-key", l -> {
          l.getBurst().setCapacity(5.0);
          l.getBurst().setRefillPerSecond(1.0);
        }, Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.per-key.burst.capacity'");
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("per-key", l -> l.getTpm().setLimit(500L), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.per-key.tpm.limit'");
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("per-key", l -> l.getConcurrency().setLimit(3L), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.per-key.concurrency.limit'");
    // a window keeps its length
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("chat", rpm(null, Duration.ofSeconds(30)), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chat.rpm.window'");
    // an invalid number in a plan is named like any other
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("chat", rpm(0L, null), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chat.rpm.limit'");
    assertThatThrownBy(() -> withPlans("default", Map.of("pro",
        plan("chat", l -> l.getConcurrency().setLeaseTimeout(Duration.ofDays(2)), Map.of()))))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans.pro.policies.chat.concurrency.lease-timeout'");
  }

  @Test
  void aPlanNameWithABraceOrSlashFailsNamingTheProperty() {
    assertThatThrownBy(() -> withPlans("default", Map.of("a/b", new RateLimiterProperties.Plan())))
        .isInstanceOf(InvalidRateLimitPropertyException.class)
        .hasMessageContaining("'ratelimiter.plans'");
  }
}
