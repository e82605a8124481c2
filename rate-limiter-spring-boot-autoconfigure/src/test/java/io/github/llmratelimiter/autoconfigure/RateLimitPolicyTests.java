package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A policy resolves each model's list of budgets once and hands every call on it the same list. */
class RateLimitPolicyTests {

  private final RateLimitPolicy chat;

  RateLimitPolicyTests() {
    RateLimiterProperties properties = new RateLimiterProperties();
    RateLimiterProperties.Policy perKey = new RateLimiterProperties.Policy();
    perKey.getRpm().setLimit(10L);
    RateLimiterProperties.Limits mini = new RateLimiterProperties.Limits();
    mini.getRpm().setLimit(7L);
    perKey.getModels().put("gpt-4o-mini", mini);
    RateLimiterProperties.Policy chatPolicy = new RateLimiterProperties.Policy();
    chatPolicy.setParent("per-key");
    chatPolicy.setScope(KeyScope.API_KEY_AND_MODEL);
    chatPolicy.getRpm().setLimit(5L);
    RateLimiterProperties.Limits gpt4o = new RateLimiterProperties.Limits();
    gpt4o.getRpm().setLimit(3L);
    chatPolicy.getModels().put("gpt-4o", gpt4o);
    properties.getPolicies().put("per-key", perKey);
    properties.getPolicies().put("chat", chatPolicy);
    chat = RateLimitPolicies.from(properties).policy("chat");
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
