package io.github.llmratelimiter.autoconfigure.aspect;

import io.github.llmratelimiter.autoconfigure.internal.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimited;
import java.lang.reflect.Method;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Role;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.ParseException;
import org.springframework.util.ClassUtils;
import org.springframework.util.function.SingletonSupplier;
import org.springframework.util.ReflectionUtils;

/**
 * Auto-configuration of {@link RateLimited}: the interceptor that enforces it (in Spring MVC, in
 * WebFlux on methods that return {@code Mono} or {@code Flux}, and outside HTTP), the advisor that
 * applies it to the annotated methods of Spring beans, and a start-up check that every policy an
 * annotation names exists and every expression it holds parses (an error names the method). It needs no AspectJ: Spring Boot's AOP auto-configuration proxies the
 * beans (with AspectJ's auto-proxying when {@code spring-boot-starter-aspectj} is present, else
 * with Spring's infrastructure auto-proxying, which applies this infrastructure advisor). Active
 * unless {@code ratelimiter.aspect.enabled=false} (or {@code spring.aop.auto=false}, which proxies
 * nothing).
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class, afterName = {
    "io.github.llmratelimiter.autoconfigure.servlet.RateLimiterServletAutoConfiguration",
    "io.github.llmratelimiter.autoconfigure.reactive.RateLimiterReactiveAutoConfiguration"})
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

  /**
   * The advisor, an infrastructure bean (so that Spring's infrastructure auto-proxying applies it),
   * static and resolving the interceptor on first call, so that declaring it creates no other bean
   * early.
   */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  @ConditionalOnMissingBean(name = "rateLimitedAdvisor")
  static Advisor rateLimitedAdvisor(ObjectProvider<RateLimitedAspect> aspect) {
    Supplier<RateLimitedAspect> interceptor = SingletonSupplier.of(aspect::getObject);
    return new DefaultPointcutAdvisor(new RateLimitedPointcut(),
        (MethodInterceptor) call -> interceptor.get().invoke(call));
  }

  @Bean
  @ConditionalOnMissingBean(name = "rateLimitedPolicyCheck")
  static SmartInitializingSingleton rateLimitedPolicyCheck(
      ConfigurableListableBeanFactory beanFactory, ObjectProvider<RateLimitPolicies> policies) {
    return () -> check(beanFactory, policies.getObject());
  }

  /**
   * Fails start-up when a {@code @RateLimited} on a bean names a policy that does not exist, or has
   * an expression that is not valid SpEL (naming the method).
   */
  static void check(ConfigurableListableBeanFactory beanFactory, RateLimitPolicies policies) {
    for (String name : beanFactory.getBeanDefinitionNames()) {
      Class<?> type = beanFactory.getType(name, false);
      if (type == null) {
        continue;
      }
      Class<?> user = ClassUtils.getUserClass(type);
      check(policies, AnnotatedElementUtils.findMergedAnnotation(user, RateLimited.class), user.getName());
      ReflectionUtils.doWithMethods(user, (Method m) -> check(policies,
          AnnotatedElementUtils.findMergedAnnotation(m, RateLimited.class),
          user.getName() + "." + m.getName() + "()"));
    }
  }

  private static void check(RateLimitPolicies policies, @Nullable RateLimited annotation, String where) {
    if (annotation == null) {
      return;
    }
    if (!annotation.policy().isEmpty() && !policies.contains(annotation.policy())) {
      throw new InvalidRateLimitPropertyException("ratelimiter.policies", annotation.policy(),
          "a policy defined under ratelimiter.policies, one of " + policies.all().keySet()
              + ", as @RateLimited on " + where + " names it");
    }
    parse(annotation.key(), "key", where);
    parse(annotation.model(), "model", where);
    parse(annotation.cost(), "cost", where);
  }

  private static void parse(String expression, String attribute, String where) {
    if (expression.isEmpty()) {
      return;
    }
    try {
      RateLimitedAspect.PARSER.parseExpression(expression);
    } catch (ParseException e) {
      throw new IllegalStateException("@RateLimited on " + where + " has a " + attribute
          + " expression that is not valid SpEL: '" + expression + "' (" + e.getMessage() + ")", e);
    }
  }
}
