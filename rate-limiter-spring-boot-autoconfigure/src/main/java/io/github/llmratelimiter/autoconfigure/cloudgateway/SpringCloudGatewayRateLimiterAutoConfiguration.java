package io.github.llmratelimiter.autoconfigure.cloudgateway;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.cloud.gateway.config.GatewayProperties;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;
import org.springframework.cloud.gateway.support.ConfigurationService;
import org.springframework.context.annotation.Bean;

/**
 * Spring Cloud Gateway's reactive server: the limiter as the gateway's own {@link RateLimiter}, the
 * bean {@value #RATE_LIMITER} ({@link LlmRateLimiter}), and a {@link KeyResolver} that reads the API
 * key from the request's headers, the bean {@value #KEY_RESOLVER}. A {@code RequestRateLimiter}
 * filter uses them by name:
 *
 * <pre>{@code
 * filters:
 *   - name: RequestRateLimiter
 *     args:
 *       rate-limiter: "#{@llmRateLimiter}"
 *       key-resolver: "#{@llmApiKeyResolver}"
 *       llm-rate-limiter.policy: chat
 * }</pre>
 *
 * <p>When the application has no other {@code RateLimiter}, {@value #RATE_LIMITER} is also the
 * filter's default one (and makes the gateway offer the filter at all). Beside another one (Spring
 * Cloud Gateway's {@code RedisRateLimiter}, present with Spring Data Redis Reactive, or the
 * application's), it is reached by its name only, so the other stays the default and nothing is
 * ambiguous. {@value #KEY_RESOLVER} is reached by its name only.
 *
 * <p>Active in a reactive web application with Spring Cloud Gateway's reactive server (unless
 * {@code spring.cloud.gateway.server.webflux.enabled=false}), once the {@link RateLimitGateway}
 * exists. It runs after the gateway's Redis configuration and before its main one, whose {@code
 * RequestRateLimiter} filter needs a {@code RateLimiter} bean.
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class,
    afterName = "org.springframework.cloud.gateway.config.GatewayRedisAutoConfiguration",
    beforeName = "org.springframework.cloud.gateway.config.GatewayAutoConfiguration")
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass({RateLimiter.class, KeyResolver.class, GatewayProperties.class})
@ConditionalOnBooleanProperty(name = "spring.cloud.gateway.server.webflux.enabled", matchIfMissing = true)
@ConditionalOnBean(RateLimitGateway.class)
public final class SpringCloudGatewayRateLimiterAutoConfiguration {

  /** The name of the {@link LlmRateLimiter} bean. */
  public static final String RATE_LIMITER = "llmRateLimiter";

  /** The name of the {@link KeyResolver} bean that reads the API key from the headers. */
  public static final String KEY_RESOLVER = "llmApiKeyResolver";

  /** Creates the auto-configuration; Spring instantiates it. */
  SpringCloudGatewayRateLimiterAutoConfiguration() {}

  /** The only {@code RateLimiter}: also the {@code RequestRateLimiter} filter's default. */
  @Bean(RATE_LIMITER)
  @ConditionalOnMissingBean(value = RateLimiter.class, name = RATE_LIMITER)
  LlmRateLimiter llmRateLimiter(RateLimitGateway gateway,
      ObjectProvider<ConfigurationService> configurationService,
      ObjectProvider<GatewayProperties> gatewayProperties) {
    return new LlmRateLimiter(gateway, configurationService.getIfAvailable(),
        gatewayProperties::getIfAvailable, true);
  }

  /** Beside another {@code RateLimiter}: reached by its name only. */
  @Bean(name = RATE_LIMITER, defaultCandidate = false)
  @ConditionalOnBean(RateLimiter.class)
  @ConditionalOnMissingBean(value = LlmRateLimiter.class, name = RATE_LIMITER)
  LlmRateLimiter namedLlmRateLimiter(RateLimitGateway gateway,
      ObjectProvider<ConfigurationService> configurationService,
      ObjectProvider<GatewayProperties> gatewayProperties) {
    return new LlmRateLimiter(gateway, configurationService.getIfAvailable(),
        gatewayProperties::getIfAvailable, false);
  }

  /** Reports the proxied responses of calls admitted to an upstream, when one is configured. */
  @Bean
  @ConditionalOnMissingBean
  UpstreamReportFilter llmUpstreamReportFilter(RateLimitGateway gateway) {
    return new UpstreamReportFilter(gateway);
  }

  @Bean(name = KEY_RESOLVER, defaultCandidate = false)
  @ConditionalOnMissingBean(name = KEY_RESOLVER)
  KeyResolver llmApiKeyResolver(RateLimitGateway gateway) {
    return new ApiKeyResolver(gateway);
  }
}
