package io.github.llmratelimiter.autoconfigure.metrics;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Micrometer auto-configuration: records every decision when Micrometer and a {@link
 * MeterRegistry} bean are present, and the waits for upstreams when calls may wait for them,
 * unless {@code ratelimiter.metrics.enabled=false}.
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class, afterName = {
    "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean({RateLimitEnforcer.class, MeterRegistry.class})
@ConditionalOnBooleanProperty(name = "ratelimiter.metrics.enabled", matchIfMissing = true)
public final class RateLimiterMetricsAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterMetricsAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  RateLimitMetrics rateLimitMetrics(MeterRegistry registry, RateLimitEnforcer enforcer) {
    return new RateLimitMetrics(registry, enforcer.store(), enforcer.policies(),
        enforcer.upstreamRoutes());
  }

  @Bean
  @ConditionalOnBean(UpstreamWaitingRoom.class)
  @ConditionalOnMissingBean
  UpstreamWaitMetrics upstreamWaitMetrics(MeterRegistry registry, RateLimitEnforcer enforcer,
      UpstreamWaitingRoom room) {
    return new UpstreamWaitMetrics(registry, room, enforcer.upstreamRoutes());
  }
}
