package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Health and metrics of a {@link RedisRateLimitStore} bean (the one {@link
 * RateLimiterRedisAutoConfiguration} defines, or the application's): the health indicator {@code
 * rateLimiter} ({@code /actuator/health/rateLimiter}) when Boot's health classes are present (off with {@code
 * management.health.ratelimiter.enabled=false}), and the meters {@code ratelimiter.store.errors}
 * and {@code ratelimiter.store.degraded} when Micrometer is (off with {@code
 * ratelimiter.metrics.enabled=false}).
 */
@AutoConfiguration(after = RateLimiterRedisAutoConfiguration.class)
@ConditionalOnClass(RedisRateLimitStore.class)
@ConditionalOnBean(RedisRateLimitStore.class)
public final class RateLimiterRedisMonitoringAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterRedisMonitoringAutoConfiguration() {}

  /** The health indicator, when Boot's health support is on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(HealthIndicator.class)
  @ConditionalOnEnabledHealthIndicator("ratelimiter")
  static final class Health {

    @Bean
    @ConditionalOnMissingBean(name = "rateLimiterHealthIndicator")
    HealthIndicator rateLimiterHealthIndicator(RedisRateLimitStore store) {
      return new RedisStoreHealthIndicator(store);
    }
  }

  /** The meters, when Micrometer is on the class path (bound to every registry by Boot). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MeterRegistry.class)
  @ConditionalOnBooleanProperty(name = "ratelimiter.metrics.enabled", matchIfMissing = true)
  static final class Metrics {

    @Bean
    @ConditionalOnMissingBean(name = "rateLimitStoreMetrics")
    MeterBinder rateLimitStoreMetrics(RedisRateLimitStore store) {
      return new RedisStoreMetrics(store);
    }
  }
}
