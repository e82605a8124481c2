package io.github.llmratelimiter.autoconfigure.memory;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.core.RateLimitStore;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.ConfigurationCondition;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when the one {@link RateLimitStore} bean is the in-memory store that {@link
 * RateLimiterAutoConfiguration} defines, not an application's own store.
 */
final class OnAutoConfiguredInMemoryStore extends SpringBootCondition
    implements ConfigurationCondition {

  /** Decided once the bean definitions are registered, as {@code @ConditionalOnBean} is. */
  @Override
  public ConfigurationPhase getConfigurationPhase() {
    return ConfigurationPhase.REGISTER_BEAN;
  }

  @Override
  public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
    ConfigurableListableBeanFactory beans = context.getBeanFactory();
    if (beans == null) {
      return ConditionOutcome.noMatch("no bean factory");
    }
    String[] stores = beans.getBeanNamesForType(RateLimitStore.class, true, false);
    if (stores.length != 1 || !beans.containsBeanDefinition(stores[0])) {
      return ConditionOutcome.noMatch("not one RateLimitStore bean definition");
    }
    BeanDefinition store = beans.getBeanDefinition(stores[0]);
    boolean ours = "rateLimitStore".equals(store.getFactoryMethodName())
        && RateLimiterAutoConfiguration.class.getName().equals(store.getFactoryBeanName());
    return ours ? ConditionOutcome.match("the auto-configured in-memory RateLimitStore")
        : ConditionOutcome.noMatch("the RateLimitStore bean '" + stores[0] + "' is the application's");
  }
}
