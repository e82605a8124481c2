package io.github.llmratelimiter.autoconfigure.aspect;

import io.github.llmratelimiter.autoconfigure.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.gateway.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimited;
import java.lang.reflect.Method;
import org.aspectj.weaver.Advice;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * AspectJ auto-configuration: the aspect that enforces {@link RateLimited} (in Spring MVC, in
 * WebFlux on methods that return {@code Mono} or {@code Flux}, and outside HTTP), and a start-up
 * check that every policy an annotation names exists. Active when AspectJ is on the class path (the
 * application adds {@code spring-boot-starter-aspectj}, whose auto-proxying applies the aspect),
 * unless {@code ratelimiter.aspect.enabled=false}.
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class, afterName = {
    "io.github.llmratelimiter.autoconfigure.web.RateLimiterWebAutoConfiguration",
    "io.github.llmratelimiter.autoconfigure.reactive.RateLimiterReactiveAutoConfiguration"})
@ConditionalOnClass(Advice.class)
@ConditionalOnBean(RateLimitGateway.class)
@ConditionalOnBooleanProperty(name = "ratelimiter.aspect.enabled", matchIfMissing = true)
public final class RateLimiterAspectAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterAspectAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  RateLimitedAspect rateLimitedAspect(RateLimitGateway gateway,
      ObjectProvider<RateLimitRequestSupport> requests,
      ObjectProvider<ReactiveRateLimitRequestSupport> reactiveRequests, BeanFactory beanFactory) {
    return new RateLimitedAspect(gateway, requests, reactiveRequests, beanFactory);
  }

  @Bean
  @ConditionalOnMissingBean(name = "rateLimitedPolicyCheck")
  static SmartInitializingSingleton rateLimitedPolicyCheck(
      ConfigurableListableBeanFactory beanFactory, ObjectProvider<RateLimitPolicies> policies) {
    return () -> check(beanFactory, policies.getObject());
  }

  /** Fails start-up when a {@code @RateLimited} on a bean names a policy that does not exist. */
  static void check(ConfigurableListableBeanFactory beanFactory, RateLimitPolicies policies) {
    for (String name : beanFactory.getBeanDefinitionNames()) {
      Class<?> type = beanFactory.getType(name, false);
      if (type == null) {
        continue;
      }
      Class<?> user = ClassUtils.getUserClass(type);
      checkPolicy(policies, user.getAnnotation(RateLimited.class), user.getName());
      ReflectionUtils.doWithMethods(user, (Method m) -> checkPolicy(
          policies, m.getAnnotation(RateLimited.class), user.getName() + "." + m.getName() + "()"));
    }
  }

  private static void checkPolicy(RateLimitPolicies policies, RateLimited annotation, String where) {
    if (annotation != null && !annotation.policy().isEmpty() && !policies.contains(annotation.policy())) {
      throw new InvalidRateLimitPropertyException("ratelimiter.policies", annotation.policy(),
          "a policy defined under ratelimiter.policies, one of " + policies.all().keySet()
              + ", as @RateLimited on " + where + " names it");
    }
  }
}
