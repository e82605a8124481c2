package io.github.llmratelimiter.autoconfigure.memory;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties;
import io.github.llmratelimiter.autoconfigure.redis.RateLimiterRedisMonitoringAutoConfiguration;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;

/**
 * Health of the in-memory rate-limit store that {@link RateLimiterAutoConfiguration} defines
 * ({@code ratelimiter.store=memory}, the default; not an application's own store): the health
 * indicator {@code rateLimiter} ({@code /actuator/health/rateLimiter}), the same component
 * the Redis store reports, when Boot's health classes are present (off with {@code
 * management.health.ratelimiter.enabled=false}).
 */
@AutoConfiguration(after = {RateLimiterAutoConfiguration.class,
    RateLimiterRedisMonitoringAutoConfiguration.class})
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean({RateLimitStore.class, RateLimitPolicies.class})
@ConditionalOnProperty(name = "ratelimiter.store", havingValue = "memory", matchIfMissing = true)
@Conditional(OnAutoConfiguredInMemoryStore.class)
@ConditionalOnEnabledHealthIndicator("ratelimiter")
public final class RateLimiterInMemoryMonitoringAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterInMemoryMonitoringAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean(name = "rateLimiterHealthIndicator")
  HealthIndicator rateLimiterHealthIndicator(RateLimitStore store, RateLimitPolicies policies,
      RateLimiterProperties properties) {
    return new InMemoryStoreHealthIndicator(store, policies,
        properties.getInMemory().getMaxKeysPerBudget());
  }
}
