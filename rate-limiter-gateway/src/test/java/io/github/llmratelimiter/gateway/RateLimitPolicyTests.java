package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A policy resolves each model's list of budgets once and hands every call on it the same list. */
class RateLimitPolicyTests {

  private final RateLimitPolicy chat;

  RateLimitPolicyTests() {
    PolicySettings perKey = new PolicySettings(LimitSettings.NONE.withRpm(10L, null), null,
        Map.of("gpt-4o-mini", LimitSettings.NONE.withRpm(7L, null)), null);
    PolicySettings chatPolicy = new PolicySettings(LimitSettings.NONE.withRpm(5L, null),
        KeyScope.API_KEY_AND_MODEL, Map.of("gpt-4o", LimitSettings.NONE.withRpm(3L, null)), "per-key");
    RateLimitSettings settings = RateLimitSettings.defaults()
        .withPolicy("per-key", perKey).withPolicy("chat", chatPolicy);
    chat = RateLimitPolicies.from(settings).policy("chat");
  }

  private List<Budget> budgets(String model) {
    return chat.budgets(RateLimitKey.of("sk-policy-0123456789", model));
  }

  private List<Budget> perLevel(String model) {
    return chat.levels().stream().map(l -> l.budgetFor(model)).toList();
  }

  @Test
  void eachModelGetsTheBudgetsOfItsOverridesAtEveryLevel() {
    for (String model : new String[] {null, "gpt-4o", "gpt-4o-mini", "other"}) {
      assertThat(budgets(model)).as(String.valueOf(model)).isEqualTo(perLevel(model));
    }
    assertThat(budgets("gpt-4o")).extracting(Budget::name).containsExactly("per-key", "chat/gpt-4o");
    assertThat(budgets("gpt-4o-mini")).extracting(Budget::name)
        .containsExactly("per-key/gpt-4o-mini", "chat");
    assertThat(budgets("other")).extracting(Budget::name).containsExactly("per-key", "chat");
  }

  @Test
  void everyCallOnAModelGetsTheSameUnmodifiableList() {
    assertThat(budgets("gpt-4o")).isSameAs(budgets("gpt-4o"));
    assertThat(budgets("other")).isSameAs(budgets(null)).isSameAs(budgets("another"));
    assertThatThrownBy(() -> budgets("gpt-4o").clear())
        .isInstanceOf(UnsupportedOperationException.class);
  }
}
