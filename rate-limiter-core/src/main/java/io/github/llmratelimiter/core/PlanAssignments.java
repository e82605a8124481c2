package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * The plans a store keeps assigned to keys at runtime: the name a plan resolver maps to the
 * variants of its budgets (see {@link Budget#variant}).
 *
 * <p>A store that keeps assignments offers them through {@link RateLimitStore#planAssignments()}.
 * Stores that share their state share their assignments: a distributed store keeps them on its
 * server, under the key's hashed form when it hashes keys. Assigning a plan changes nothing a key
 * spent: a plan only names the limits its later calls carry.
 */
public interface PlanAssignments {

  /**
   * Returns the plan assigned to a key, if any.
   *
   * @param key the key (an API key, a tenant), not blank
   * @return the plan's name, or empty when none is assigned
   * @throws IllegalArgumentException on a blank key
   * @throws IllegalStateException when a distributed store cannot read it now (its server does not
   *     answer): the caller keeps what it knew rather than taking the key for unassigned
   */
  Optional<String> assignedPlan(String key);

  /**
   * Returns the plan assigned to a key, like {@link #assignedPlan}, without blocking the caller: a
   * distributed store reads it with one asynchronous command. The default answers {@link
   * #assignedPlan} on the calling thread.
   *
   * @param key the key (an API key, a tenant), not blank
   * @return a stage that completes with the plan's name, or empty when none is assigned; it
   *     completes exceptionally with an {@link IllegalStateException} when a distributed store
   *     cannot read it now
   * @throws IllegalArgumentException on a blank key
   */
  default CompletionStage<Optional<String>> assignedPlanAsync(String key) {
    Args.notBlank("key", key);
    try {
      return CompletableFuture.completedFuture(assignedPlan(key));
    } catch (IllegalStateException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Assigns a plan to a key, or clears its assignment.
   *
   * @param key the key, not blank
   * @param plan the plan's name, not blank; {@code null} clears the assignment
   * @throws IllegalArgumentException on a blank key or plan
   * @throws IllegalStateException when a distributed store cannot write it now
   */
  void assignPlan(String key, @Nullable String plan);
}
