package io.github.llmratelimiter.starter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.util.ClassUtils;

/**
 * The starter forces no web stack: on the class path it brings (this module's test class path is
 * the starter's dependencies and spring-boot-starter-test, nothing else), there is no Spring MVC,
 * no WebFlux, no servlet container and no AspectJ, and an application started on it runs the
 * limiter's core beans without any web adapter.
 */
class StarterWithoutWebStackTests {

  @ParameterizedTest
  @ValueSource(strings = {
      "org.springframework.web.servlet.DispatcherServlet", // Spring MVC
      "org.springframework.web.reactive.DispatcherHandler", // WebFlux
      "reactor.core.publisher.Mono",
      "org.springframework.web.bind.annotation.RestControllerAdvice", // spring-web
      "jakarta.servlet.Servlet",
      "org.apache.catalina.startup.Tomcat",
      "org.aspectj.weaver.Advice",
      "tools.jackson.core.json.JsonFactory"})
  void theStarterPullsInNoWebStackAndNoAspectJ(String className) {
    assertThat(ClassUtils.isPresent(className, getClass().getClassLoader())).as(className).isFalse();
  }

  @Test
  void runWhenNoWebStackIsOnTheClassPathShouldStartWithTheCoreBeansAndNoServletAdapter() {
    SpringApplication application = new SpringApplication(App.class);
    assertThat(application.getWebApplicationType()).isEqualTo(WebApplicationType.NONE);
    try (ConfigurableApplicationContext context =
        application.run("--ratelimiter.rpm.limit=2", "--spring.main.banner-mode=off")) {
      assertThat(context.getBeansOfType(RateLimitStore.class)).hasSize(1);
      assertThat(context.getBeansOfType(RateLimitPolicies.class)).hasSize(1);
      assertThat(context.getBeansOfType(RateLimitEnforcer.class)).hasSize(1);
      assertThat(context.getBeansOfType(RateLimitGateway.class)).hasSize(1);
      for (String webBean : new String[] {"rateLimitKeyResolver", "rateLimitRequestSupport",
          "rateLimitWebMvcConfigurer", "rateLimitExceptionHandler", "rateLimitModelPeekingFilter",
          "rateLimitModelTokenUsageFilter", "reactiveRateLimitKeyResolver", "rateLimitWebFilter",
          "rateLimitWebExceptionHandler"}) {
        assertThat(context.containsBean(webBean)).as(webBean).isFalse();
      }
      // @RateLimited needs no AspectJ: its interceptor is there, for beans outside HTTP
      assertThat(context.containsBean("rateLimitedAspect")).isTrue();

      // the charge step works without a front door: 2 calls a minute, then a deny
      RateLimitGateway gateway = context.getBean(RateLimitGateway.class);
      RateLimitKey key = RateLimitKey.of("sk-no-web-0123456789", null);
      assertThat(gateway.charge(null, null, key, 1).decision().remaining()).isEqualTo(1);
      assertThat(gateway.charge(null, null, key, 1).decision().remaining()).isZero();
      assertThatThrownBy(() -> gateway.charge(null, null, key, 1))
          .isInstanceOf(RateLimitExceededException.class);
    }
  }

  /** An application with nothing but auto-configuration. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {}
}
