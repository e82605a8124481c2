package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The plan assignments of an {@link InMemoryStore}: a map from key to plan, written by operators
 * only, so bounded by them.
 */
final class InMemoryPlans implements PlanAssignments {

  private final ConcurrentHashMap<String, String> plans = new ConcurrentHashMap<>();

  @Override
  public Optional<String> assignedPlan(String key) {
    return Optional.ofNullable(plans.get(Args.notBlank("key", key)));
  }

  @Override
  public void assignPlan(String key, @Nullable String plan) {
    Args.notBlank("key", key);
    if (plan == null) {
      plans.remove(key);
    } else {
      plans.put(key, Args.notBlank("plan", plan));
    }
  }

  /** Forgets every assignment. */
  void clear() {
    plans.clear();
  }
}
