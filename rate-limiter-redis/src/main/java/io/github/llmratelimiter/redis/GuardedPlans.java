package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.internal.Args;
import io.lettuce.core.RedisException;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The plan assignments of a {@link GuardedRedisStore}: Redis's, under the same circuit breaker and
 * command timeout as decisions (on a Cluster, those of the master that serves the key's plan).
 * Assignments live in Redis only: while Redis does not answer, every call throws an {@link
 * IllegalStateException} (or its stage fails with one) whatever the failure policy, so that a
 * resolver keeps the plan it knew instead of taking the key for unassigned.
 */
final class GuardedPlans implements PlanAssignments {

  private final RedisPlans redis;
  private final RedisMasters masters;
  /** Whether a fallback exists: it changes the message of a failure, never its outcome. */
  private final boolean fallback;

  GuardedPlans(LuaRateLimitStore store, RedisMasters masters, boolean fallback) {
    this.redis = store.redisPlans();
    this.masters = masters;
    this.fallback = fallback;
  }

  @Override
  public Optional<String> assignedPlan(String key) {
    Args.notBlank("key", key);
    return master(key).breaker().call(() -> redis.assignedPlan(key), unavailable());
  }

  /**
   * {@inheritDoc}
   *
   * <p>One {@code GET}, under the same circuit breaker and command timeout as decisions; while
   * Redis does not answer, the stage fails whatever the policy, as {@link #assignedPlan} throws.
   */
  @Override
  public CompletionStage<Optional<String>> assignedPlanAsync(String key) {
    Args.notBlank("key", key);
    RedisMasters.Master master = master(key);
    RedisBreaker breaker = master.breaker();
    if (!breaker.tryAcquirePermission()) {
      return CompletableFuture.failedFuture(
          new IllegalStateException("the Redis rate-limit store is unavailable"));
    }
    long start = System.nanoTime();
    CompletableFuture<String> sent;
    try {
      sent = redis.submitAssignedPlan(key);
    } catch (RedisException e) {
      breaker.failed(e, start);
      return CompletableFuture.failedFuture(
          new IllegalStateException("the Redis rate-limit store is unavailable", e));
    } catch (RuntimeException e) {
      breaker.releasePermission();
      throw e;
    }
    return master.replies().within(sent, start).handle((plan, failure) -> {
      if (failure != null) {
        breaker.failed(Replies.redisException(failure), start);
        throw new IllegalStateException("the Redis rate-limit store is unavailable");
      }
      breaker.succeeded(start);
      return Optional.ofNullable(plan);
    });
  }

  @Override
  public void assignPlan(String key, @Nullable String plan) {
    Args.notBlank("key", key);
    if (plan != null) {
      Args.notBlank("plan", plan);
    }
    master(key).breaker().call(() -> {
      redis.assignPlan(key, plan);
      return null;
    }, unavailable());
  }

  /** The master that serves the key's plan assignment. */
  private RedisMasters.Master master(String key) {
    return masters.forKey(redis.planKey(key));
  }

  /** What answers while Redis does not: a failure, whose message says whether a fallback exists. */
  private <T> @Nullable Supplier<T> unavailable() {
    return fallback ? () -> {
      throw new IllegalStateException("the Redis rate-limit store is unavailable");
    } : null;
  }
}
