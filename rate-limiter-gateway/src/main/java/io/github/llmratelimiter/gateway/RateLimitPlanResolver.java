package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.Ticker;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Maps an API key (a tenant) to the name of its plan ({@code ratelimiter.plans}), whose limits its
 * calls are decided against. The default ({@link #caching}) reads a runtime assignment kept by the
 * store, else the default plan; an application that keeps its tenants' plans elsewhere (its own
 * database) implements this interface.
 *
 * <p>{@link #plan} runs on the thread that charges a call; {@link #planAsync} on an event loop,
 * where it must not block: an implementation that looks a plan up over I/O overrides it. A name
 * that is not one of the configured plans is taken as the default plan.
 */
public interface RateLimitPlanResolver extends AutoCloseable {

  /**
   * Returns the plan of an API key.
   *
   * @param apiKey the API key, not blank
   * @return the plan's name
   */
  String plan(String apiKey);

  /**
   * Returns the plan of an API key without blocking the caller; the default answers {@link #plan}
   * on the calling thread.
   *
   * @param apiKey the API key, not blank
   * @return a stage that completes with the plan's name
   */
  default CompletionStage<String> planAsync(String apiKey) {
    try {
      return CompletableFuture.completedFuture(plan(apiKey));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Assigns a plan to an API key, or clears its assignment, so that its later calls carry the
   * plan's limits; nothing the key spent is reset. The default refuses: plans come from wherever
   * this resolver reads them.
   *
   * @param apiKey the API key, not blank
   * @param plan one of the configured plans, or {@code null} to clear the assignment (the key then
   *     has the default plan)
   * @throws UnsupportedOperationException if this resolver does not take assignments
   * @throws IllegalArgumentException if the plan is not one of the configured plans
   */
  default void assign(String apiKey, @Nullable String plan) {
    throw new UnsupportedOperationException(getClass().getSimpleName()
        + " reads plans from elsewhere: assign them there");
  }

  /**
   * Returns whether a key has a plan assigned to it, as far as this resolver knows.
   *
   * @param apiKey the API key, not blank
   * @return whether its plan is an assignment rather than the default; {@code false} when the
   *     resolver does not keep assignments
   */
  default boolean assigned(String apiKey) {
    return false;
  }

  /**
   * Releases what the resolver holds (a thread, connections); the default holds nothing.
   */
  @Override
  default void close() {}

  /**
   * Returns the default resolver: the plan the store keeps assigned to a key ({@link
   * PlanAssignments#assignedPlan}), else the default plan, through a bounded local cache. A plan
   * read less than {@code refresh} ago is used without asking the store; one older than half of it
   * is read again in the background, so that a key in steady use never waits for its plan and every
   * instance sees an assignment within {@code refresh}. {@link #assign} writes to the store and to
   * this cache. A key not cached is read on the calling thread by {@link
   * #plan} and through the store's asynchronous read ({@link PlanAssignments#assignedPlanAsync}) by
   * {@link #planAsync}, which never blocks. While the store cannot answer, a key keeps the plan last
   * read (or the default plan). Once closed, it reads nothing more in the background.
   *
   * @param assignments the store's plan assignments ({@link
   *     io.github.llmratelimiter.core.RateLimitStore#planAssignments()})
   * @param policies the policies, whose plans an assignment must name
   * @param ticker the time a cached plan's age is measured on
   * @param refresh the longest a cached plan is used, positive
   * @param maxKeys the most keys cached, at least 1
   * @return the resolver
   * @throws IllegalArgumentException on a null argument, a refresh that is not positive or {@code
   *     maxKeys} below 1
   */
  static RateLimitPlanResolver caching(PlanAssignments assignments, RateLimitPolicies policies,
      Ticker ticker, Duration refresh, int maxKeys) {
    return new CachingPlanResolver(assignments, policies, ticker, refresh, maxKeys);
  }

  /**
   * Returns a resolver that gives every key one plan.
   *
   * @param plan the plan's name, not blank
   * @return the resolver
   * @throws IllegalArgumentException if the plan is blank
   */
  static RateLimitPlanResolver fixed(String plan) {
    if (plan == null || plan.isBlank()) {
      throw new IllegalArgumentException("plan must not be blank, but was '" + plan + "'");
    }
    CompletionStage<String> done = CompletableFuture.completedFuture(plan);
    return new RateLimitPlanResolver() {
      @Override
      public String plan(String apiKey) {
        return plan;
      }

      @Override
      public CompletionStage<String> planAsync(String apiKey) {
        return done;
      }
    };
  }
}
