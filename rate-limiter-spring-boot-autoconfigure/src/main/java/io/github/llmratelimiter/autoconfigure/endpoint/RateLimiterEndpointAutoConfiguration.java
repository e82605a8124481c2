package io.github.llmratelimiter.autoconfigure.endpoint;

import io.github.llmratelimiter.autoconfigure.RateLimitEnforcer;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Actuator auto-configuration: the {@code ratelimiter} endpoint, when Actuator is on the class
 * path and the endpoint is available (exposed and not disabled).
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class)
@ConditionalOnClass({Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(RateLimitEnforcer.class)
@ConditionalOnAvailableEndpoint(RateLimiterEndpoint.class)
public final class RateLimiterEndpointAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterEndpointAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  RateLimiterEndpoint rateLimiterEndpoint(RateLimitEnforcer enforcer, RateLimiterProperties properties) {
    return new RateLimiterEndpoint(enforcer.store(), enforcer.policies(),
        properties.getEndpoint().getTop(), properties.getEndpoint().getMaxTop());
  }
}
