package io.github.llmratelimiter.autoconfigure.aspect;

import io.github.llmratelimiter.gateway.RateLimited;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * The methods {@link RateLimited} limits: a method that carries it, and every public method of a
 * class that carries it (but those of {@code Object}).
 */
final class RateLimitedPointcut extends StaticMethodMatcherPointcut {

  @Override
  public boolean matches(Method method, Class<?> targetClass) {
    Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
    if (AnnotatedElementUtils.hasAnnotation(specific, RateLimited.class)) {
      return true;
    }
    return Modifier.isPublic(specific.getModifiers()) && specific.getDeclaringClass() != Object.class
        && AnnotatedElementUtils.hasAnnotation(targetClass, RateLimited.class);
  }
}
