package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Ticker;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Core auto-configuration: binds {@code ratelimiter.*}, resolves the policies, and provides the
 * {@link RateLimitStore} (in-memory unless another auto-configuration or the application defines
 * one), the {@link ModelTokenEstimator} of the tokens-per-window budgets and the {@link
 * RateLimitEnforcer} every other concern uses.
 *
 * <p>The in-memory store reads time from the application's {@link Ticker} bean when there is one
 * (tests drive time with it), else from the system ticker. A distributed store's auto-configuration
 * runs before this one and defines its own {@code RateLimitStore} bean, which then wins.
 */
@AutoConfiguration
@ConditionalOnBooleanProperty(name = "ratelimiter.enabled", matchIfMissing = true)
@EnableConfigurationProperties(RateLimiterProperties.class)
public final class RateLimiterAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  RateLimitPolicies rateLimitPolicies(RateLimiterProperties properties) {
    return RateLimitPolicies.from(properties);
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitStore rateLimitStore(ObjectProvider<Ticker> ticker, RateLimiterProperties properties) {
    if (properties.getStore() == RateLimiterProperties.StoreType.REDIS) {
      // the Redis auto-configuration did not define the store: its classes are missing
      throw new InvalidRateLimitPropertyException("ratelimiter.store", "redis", "memory, or redis"
          + " with io.github.llmratelimiter:rate-limiter-redis and"
          + " org.springframework.boot:spring-boot-starter-data-redis (Lettuce) on the class path");
    }
    return RateLimitStore.inMemory(
        ticker.getIfAvailable(Ticker::system), properties.getInMemory().getMaxKeysPerBudget());
  }

  @Bean
  @ConditionalOnMissingBean
  ModelTokenEstimator modelTokenEstimator(RateLimiterProperties properties) {
    return DefaultModelTokenEstimator.of(properties.getTpm());
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitEnforcer rateLimitEnforcer(RateLimitStore store, RateLimitPolicies policies,
      RateLimiterProperties properties, ObjectProvider<RateLimitObserver> observers) {
    return new RateLimitEnforcer(store, policies, properties.getStoreFailure(), observers);
  }
}
