package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.internal.Args;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The plan assignments of a {@link LuaRateLimitStore}, straight on Redis: one string key per
 * assigned key ({@link RedisKeys#plan}), read and written with one command. A Redis failure
 * surfaces as Lettuce's {@code RedisException}, which {@link GuardedPlans} turns into an {@link
 * IllegalStateException}.
 */
final class RedisPlans implements PlanAssignments {

  private final RedisLink link;
  private final RedisKeys layout;

  RedisPlans(RedisLink link, RedisKeys layout) {
    this.link = link;
    this.layout = layout;
  }

  @Override
  public Optional<String> assignedPlan(String key) {
    Args.notBlank("key", key);
    return Optional.ofNullable(link.commands().get(layout.plan(key)));
  }

  /** Sends the read of a key's plan assignment: one {@code GET}, its reply on Lettuce's loop. */
  CompletableFuture<String> submitAssignedPlan(String key) {
    Args.notBlank("key", key);
    String planKey = layout.plan(key);
    return link.async().thenCompose(redis -> redis.get(planKey).toCompletableFuture());
  }

  /** The Redis key of a key's plan assignment. */
  String planKey(String key) {
    return layout.plan(key);
  }

  @Override
  public void assignPlan(String key, @Nullable String plan) {
    Args.notBlank("key", key);
    if (plan == null) {
      link.commands().del(layout.plan(key));
    } else {
      link.commands().set(layout.plan(key), Args.notBlank("plan", plan));
    }
  }
}
