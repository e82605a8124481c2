package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.CompositeKey;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The policies' builder: chains root first, plans as variants of the budgets they override, and an
 * {@link IllegalArgumentException} naming the argument for anything it cannot build.
 */
class RateLimitPoliciesBuilderTests {

  private static final RateLimitKey KEY = RateLimitKey.of("sk-builder-0123456789", "gpt-4o");

  private static Budget perMinute(String name, long limit) {
    return new Budget(name, WindowLimit.perMinute(limit), null);
  }

  private static RateLimitPolicies.Builder chatUnderPerKey() {
    return RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("per-key", KeyScope.API_KEY, perMinute("per-key", 10))
        .policy("chat", KeyScope.API_KEY_AND_MODEL,
            new Budget("chat", WindowLimit.perMinute(5), new BucketLimit(4, 1)),
            Map.of("gpt-4o", new Budget("chat/gpt-4o", WindowLimit.perMinute(3), new BucketLimit(4, 1))),
            "per-key")
        .defaultPolicy("chat");
  }

  @Test
  void aPolicyIsChargedOnItsChainRootFirstWithItsModelOverride() {
    RateLimitPolicies policies = chatUnderPerKey().build();
    assertThat(policies.composition()).isEqualTo(Composition.RESERVE_COMMIT);
    assertThat(policies.defaultPolicy()).isEqualTo("chat");
    assertThat(policies.all()).containsOnlyKeys("per-key", "chat");
    assertThat(policies.policy(null).budgets(KEY)).extracting(Budget::name)
        .containsExactly("per-key", "chat/gpt-4o");
    assertThat(policies.policy(null).keys(KEY))
        .containsExactly(KEY.apiKey(), new CompositeKey(KEY.apiKey(), "gpt-4o").value());
    assertThat(policies.plans()).containsExactly(RateLimitPolicies.DEFAULT_PLAN);
  }

  @Test
  void aPlanChargesVariantsOfTheBudgetsItOverridesAndTheSameBudgetsElsewhere() {
    RateLimitPolicies policies = chatUnderPerKey()
        .plan("free")
        .plan("pro", "chat", new Budget("chat", WindowLimit.perMinute(50), new BucketLimit(40, 1)),
            Map.of("gpt-4o", new Budget("chat/gpt-4o", WindowLimit.perMinute(30), new BucketLimit(40, 1))))
        .defaultPlan("free")
        .build();
    RateLimitPolicy chat = policies.policy("chat");
    assertThat(policies.plans()).containsExactly("free", "pro");
    assertThat(chat.budgets(KEY, "free")).isEqualTo(chat.budgets(KEY));
    Budget pro = chat.budgets(KEY, "pro").get(1);
    assertThat(pro.variantOf()).isSameAs(chat.budgets(KEY).get(1));
    assertThat(pro.window()).isEqualTo(WindowLimit.perMinute(30));
    assertThat(chat.budgets(KEY, "pro").get(0)).isSameAs(chat.budgets(KEY).get(0));
    // a model the plan does not name keeps its budget as configured
    RateLimitPolicies policyOnly = chatUnderPerKey()
        .plan("pro", "chat", new Budget("chat", WindowLimit.perMinute(50), new BucketLimit(40, 1)), Map.of())
        .build();
    assertThat(policyOnly.policy("chat").budgets(KEY, "pro").get(1))
        .isSameAs(policyOnly.policy("chat").budgets(KEY).get(1));
  }

  @Test
  void anInvalidArgumentIsAnIllegalArgumentExceptionNamingIt() {
    assertThatThrownBy(() -> RateLimitPolicies.builder(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("composition");
    assertThatThrownBy(() -> RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("a/b", KeyScope.API_KEY, perMinute("a", 1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("policy name")
        .hasMessageContaining("'a/b'");
    assertThatThrownBy(() -> RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("chat", null, perMinute("chat", 1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scope");
    assertThatThrownBy(() -> RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("chat", KeyScope.API_KEY, perMinute("chat", 1), Map.of("{x}", perMinute("c", 1)), null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("model name")
        .hasMessageContaining("'{x}'");
    assertThatThrownBy(() -> chatUnderPerKey().policy("chat", KeyScope.API_KEY, perMinute("chat", 1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'chat'");
    assertThatThrownBy(() -> chatUnderPerKey().plan(" "))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("plan name");
    assertThatThrownBy(() -> chatUnderPerKey().plan("pro", "chat", perMinute("chat", 1),
        java.util.Collections.singletonMap("a/b", perMinute("chat/a", 1))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("model name")
        .hasMessageContaining("'a/b'");
    assertThatThrownBy(() -> chatUnderPerKey().plan("pro", "chat", perMinute("chat", 1),
        java.util.Collections.singletonMap("gpt-4o", null)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'gpt-4o'");
    assertThatThrownBy(() -> chatUnderPerKey()
        .policy("orphan", KeyScope.API_KEY, perMinute("orphan", 1), Map.of(), " "))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("parent");
  }

  @Test
  void whatCannotBeBuiltIsAnIllegalArgumentExceptionSayingWhy() {
    assertThatThrownBy(() -> RateLimitPolicies.builder(Composition.SEQUENTIAL).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("defaultPolicy")
        .hasMessageContaining("'default'");
    assertThatThrownBy(() -> chatUnderPerKey().defaultPolicy("chta").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'chta'");
    assertThatThrownBy(() -> chatUnderPerKey()
        .policy("orphan", KeyScope.API_KEY, perMinute("orphan", 1), Map.of(), "nobody").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'nobody'")
        .hasMessageContaining("policy 'orphan'");
    assertThatThrownBy(() -> RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("a", KeyScope.API_KEY, perMinute("a", 1), Map.of(), "b")
        .policy("b", KeyScope.API_KEY, perMinute("b", 1), Map.of(), "a")
        .defaultPolicy("a").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lead back");
    assertThatThrownBy(() -> chatUnderPerKey().defaultPlan("gold").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'gold'");
    assertThatThrownBy(() -> chatUnderPerKey()
        .plan("pro", "chta", perMinute("chta", 1), Map.of()).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'chta'");
    assertThatThrownBy(() -> chatUnderPerKey()
        .plan("pro", "chat", new Budget("chat", WindowLimit.perMinute(5), new BucketLimit(4, 1)),
            Map.of("gpt-5", perMinute("chat/gpt-5", 1))).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'gpt-5'");
  }

  @Test
  void aPlanThatWouldChangeABudgetsShapeIsRefused() {
    // per-key has no bucket: a plan cannot add one
    assertThatThrownBy(() -> chatUnderPerKey().plan("pro", "per-key",
        new Budget("per-key", WindowLimit.perMinute(10), new BucketLimit(5, 1)), Map.of()).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'per-key'")
        .hasMessageContaining("keeps its windows");
    // nor a concurrency limit, nor another window length
    assertThatThrownBy(() -> chatUnderPerKey().plan("pro", "per-key",
        new Budget("per-key", WindowLimit.perMinute(10), null, null, ConcurrencyLimit.of(3)), Map.of())
        .build()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> chatUnderPerKey().plan("pro", "per-key",
        new Budget("per-key", new WindowLimit(10, Duration.ofSeconds(30)), null), Map.of()).build())
        .isInstanceOf(IllegalArgumentException.class);
  }
}
