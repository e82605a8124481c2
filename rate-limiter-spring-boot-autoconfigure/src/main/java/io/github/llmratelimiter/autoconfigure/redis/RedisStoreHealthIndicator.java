package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.redis.RedisRateLimitStore;
import java.util.Locale;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The health of the Redis rate-limit store: {@code UP} when Redis answers a {@code PING} within the
 * command timeout (on a Cluster, every master), else {@code DOWN}. Details: the store type, the
 * failure policy, whether the policy currently answers ({@code degraded}: on a Cluster, for the
 * keys of any master) and the number of failed Redis calls (on every master); never a key.
 */
final class RedisStoreHealthIndicator extends AbstractHealthIndicator {

  private final RedisRateLimitStore store;

  RedisStoreHealthIndicator(RedisRateLimitStore store) {
    super("Redis rate-limit store health check failed");
    this.store = store;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    boolean answers = store.ping();
    (answers ? builder.up() : builder.down())
        .withDetail("store", "redis")
        .withDetail("failurePolicy", store.failurePolicy().name().toLowerCase(Locale.ROOT).replace('_', '-'))
        .withDetail("degraded", store.degraded())
        .withDetail("errors", store.errorCount());
  }
}
