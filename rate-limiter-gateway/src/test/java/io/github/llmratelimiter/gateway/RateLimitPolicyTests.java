package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.WindowLimit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A policy resolves each model's list of budgets once and hands every call on it the same list. */
class RateLimitPolicyTests {

  private final RateLimitPolicy chat;

  RateLimitPolicyTests() {
    chat = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("default", KeyScope.API_KEY, perMinute("default", 60))
        .policy("per-key", KeyScope.API_KEY, perMinute("per-key", 10),
            Map.of("gpt-4o-mini", perMinute("per-key/gpt-4o-mini", 7)), null)
        .policy("chat", KeyScope.API_KEY_AND_MODEL, perMinute("chat", 5),
            Map.of("gpt-4o", perMinute("chat/gpt-4o", 3)), "per-key")
        .build().policy("chat");
  }

  private static Budget perMinute(String name, long limit) {
    return new Budget(name, WindowLimit.perMinute(limit), null);
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
