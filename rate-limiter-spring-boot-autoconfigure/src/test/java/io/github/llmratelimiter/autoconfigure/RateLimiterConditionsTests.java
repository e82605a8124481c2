package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.aspect.RateLimiterAspectAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpoint;
import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpointAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.internal.AnnotationEnforcement;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.metrics.RateLimiterMetricsAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.reactive.RateLimiterReactiveAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.reactive.ReactiveRateLimitKeyResolver;
import io.github.llmratelimiter.autoconfigure.servlet.RateLimitKeyResolver;
import io.github.llmratelimiter.autoconfigure.servlet.RateLimiterServletAutoConfiguration;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitProblemFactory;
import io.github.llmratelimiter.gateway.StoreFailure;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import org.aspectj.weaver.Advice;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.web.reactive.DispatcherHandler;
import org.springframework.web.server.WebExceptionHandler;
import org.springframework.web.server.WebFilter;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/** Every auto-configuration's conditions: on, off, user bean wins, optional classes missing. */
class RateLimiterConditionsTests {

  private static final AutoConfigurations ALL = AutoConfigurations.of(
      RateLimiterAutoConfiguration.class, RateLimiterServletAutoConfiguration.class,
      RateLimiterReactiveAutoConfiguration.class,
      RateLimiterAspectAutoConfiguration.class, RateLimiterEndpointAutoConfiguration.class,
      RateLimiterMetricsAutoConfiguration.class);

  private final WebApplicationContextRunner web = new WebApplicationContextRunner().withConfiguration(ALL);
  private final ReactiveWebApplicationContextRunner reactive =
      new ReactiveWebApplicationContextRunner().withConfiguration(ALL);
  private final ApplicationContextRunner plain = new ApplicationContextRunner().withConfiguration(ALL);

  @Test
  void runWhenServletWebApplicationShouldConfigureTheWebConcern() {
    web.run(context -> assertThat(context)
        .hasSingleBean(RateLimitKeyResolver.class)
        .hasSingleBean(RateLimitProblemFactory.class)
        .hasSingleBean(RateLimitRequestSupport.class)
        .hasBean("rateLimitWebMvcConfigurer")
        .hasBean("rateLimitExceptionHandler")
        .hasBean("rateLimitModelPeekingFilter"));
  }

  @Test
  void runWhenServletWebApplicationShouldNotConfigureTheReactiveAdapter() {
    web.run(context -> assertThat(context)
        .doesNotHaveBean(ReactiveRateLimitKeyResolver.class)
        .doesNotHaveBean(ReactiveRateLimitRequestSupport.class)
        .doesNotHaveBean(WebFilter.class)
        .doesNotHaveBean("reactiveRateLimitExceptionHandler")
        .doesNotHaveBean("rateLimiterFoundHandlerMapping"));
  }

  @Test
  void runWhenReactiveWebApplicationShouldConfigureTheReactiveAdapterOnly() {
    reactive.run(context -> assertThat(context)
        .hasSingleBean(ReactiveRateLimitKeyResolver.class)
        .hasSingleBean(ReactiveRateLimitRequestSupport.class)
        .hasSingleBean(WebFilter.class)
        .hasSingleBean(WebExceptionHandler.class)
        .hasBean("reactiveRateLimitExceptionHandler")
        .hasBean("rateLimiterFoundHandlerMapping")
        .doesNotHaveBean(RateLimitKeyResolver.class)
        .doesNotHaveBean(RateLimitRequestSupport.class)
        .doesNotHaveBean(WebMvcConfigurer.class));
  }

  @Test
  void runWhenWebFluxIsMissingShouldSkipTheReactiveAdapter() {
    reactive.withClassLoader(new FilteredClassLoader(DispatcherHandler.class)).run(context ->
        assertThat(context)
            .hasSingleBean(RateLimitEnforcer.class)
            .doesNotHaveBean(ReactiveRateLimitKeyResolver.class)
            .doesNotHaveBean(WebFilter.class));
  }

  @Test
  void runWhenWebDisabledShouldSkipTheReactiveAdapter() {
    reactive.withPropertyValues("ratelimiter.web.enabled=false").run(context -> assertThat(context)
        .hasSingleBean(RateLimitEnforcer.class)
        .doesNotHaveBean(ReactiveRateLimitKeyResolver.class)
        .doesNotHaveBean(WebFilter.class));
  }

  @Test
  void runWhenUserDefinesReactiveBeansShouldUseThem() {
    ReactiveRateLimitKeyResolver resolver = exchange -> "fixed";
    reactive.withBean(ReactiveRateLimitKeyResolver.class, () -> resolver).run(context ->
        assertThat(context.getBean(ReactiveRateLimitKeyResolver.class)).isSameAs(resolver));
  }

  @Test
  void runWhenReactiveRoutePatternInvalidShouldFailNamingTheProperty() {
    reactive.withPropertyValues("ratelimiter.web.routes[0].include=/v1/{*a}/b").run(context -> {
      assertThat(context).hasFailed();
      assertThat(new RateLimiterFailureAnalyzer().analyze(context.getStartupFailure()).getDescription())
          .contains("'ratelimiter.web.routes[0].include[0]'").contains("a Spring path pattern");
    });
  }

  @Test
  void runWhenOnlyAWebAdapterRunsOnTheApplicationsGatewayShouldBindTheWebPropertiesItself() {
    RateLimitGateway gateway = RateLimitGateway.builder(new RateLimitEnforcer(
        RateLimitStore.inMemory(), RateLimitPolicies.builder(Composition.SEQUENTIAL)
            .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(1), null))
            .build(), StoreFailure.DENY, List::of), Json.READER).build();
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RateLimiterServletAutoConfiguration.class))
        .withBean(RateLimitGateway.class, () -> gateway)
        .run(context -> assertThat(context).hasNotFailed()
            .hasSingleBean(RateLimiterWebProperties.class));
    new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RateLimiterReactiveAutoConfiguration.class))
        .withBean(RateLimitGateway.class, () -> gateway)
        .run(context -> assertThat(context).hasNotFailed()
            .hasSingleBean(RateLimiterWebProperties.class));
  }

  @Test
  void runWhenNotAWebApplicationShouldSkipTheWebConcern() {
    plain.run(context -> assertThat(context)
        .hasSingleBean(RateLimitEnforcer.class)
        .doesNotHaveBean(RateLimitKeyResolver.class)
        .doesNotHaveBean(WebMvcConfigurer.class));
  }

  @Test
  void runWhenSpringMvcIsMissingShouldSkipTheWebConcern() {
    web.withClassLoader(new FilteredClassLoader(DispatcherServlet.class)).run(context -> assertThat(context)
        .hasSingleBean(RateLimitEnforcer.class)
        .doesNotHaveBean(RateLimitKeyResolver.class));
  }

  @Test
  void runWhenWebDisabledShouldSkipTheWebConcern() {
    web.withPropertyValues("ratelimiter.web.enabled=false").run(context -> assertThat(context)
        .hasSingleBean(RateLimitEnforcer.class)
        .doesNotHaveBean(RateLimitKeyResolver.class));
  }

  @Test
  void runWhenModelFromBodyDisabledShouldSkipTheFilter() {
    web.withPropertyValues("ratelimiter.web.model-from-body=false").run(context -> assertThat(context)
        .hasSingleBean(RateLimitKeyResolver.class)
        .doesNotHaveBean("rateLimitModelPeekingFilter"));
  }

  @Test
  void runWhenUserDefinesWebBeansShouldUseThem() {
    RateLimitKeyResolver resolver = request -> "fixed";
    web.withBean(RateLimitKeyResolver.class, () -> resolver).run(context ->
        assertThat(context.getBean(RateLimitKeyResolver.class)).isSameAs(resolver));
  }

  @Test
  void runWhenRoutePatternInvalidShouldFailNamingTheProperty() {
    web.withPropertyValues("ratelimiter.web.routes[0].include=/v1/{*a}/b").run(context -> {
      assertThat(context).hasFailed();
      assertThat(new RateLimiterFailureAnalyzer().analyze(context.getStartupFailure()).getDescription())
          .contains("'ratelimiter.web.routes[0].include[0]'").contains("a Spring path pattern");
    });
  }

  @Test
  void runWhenAspectJPresentShouldConfigureTheAspect() {
    plain.run(context -> assertThat(context).hasSingleBean(AnnotationEnforcement.class));
  }

  @Test
  void runWhenAspectJMissingShouldStillConfigureTheAnnotationsInterceptor() {
    plain.withClassLoader(new FilteredClassLoader(Advice.class)).run(context -> assertThat(context)
        .hasSingleBean(RateLimitEnforcer.class)
        .hasSingleBean(AnnotationEnforcement.class)
        .hasBean("rateLimitedAdvisor"));
  }

  @Test
  void runWhenAspectDisabledShouldSkipTheAspect() {
    plain.withPropertyValues("ratelimiter.aspect.enabled=false").run(context ->
        assertThat(context).doesNotHaveBean(AnnotationEnforcement.class));
  }

  @Test
  void runWhenEndpointExposedShouldDefineIt() {
    plain.withPropertyValues("management.endpoints.web.exposure.include=ratelimiter").run(context ->
        assertThat(context).hasSingleBean(RateLimiterEndpoint.class));
  }

  @Test
  void runWhenEndpointNotExposedShouldNotDefineIt() {
    plain.run(context -> assertThat(context).doesNotHaveBean(RateLimiterEndpoint.class));
  }

  @Test
  void runWhenActuatorMissingShouldNotDefineTheEndpoint() {
    plain.withClassLoader(new FilteredClassLoader(Endpoint.class))
        .withPropertyValues("management.endpoints.web.exposure.include=ratelimiter")
        .run(context -> assertThat(context)
            .hasSingleBean(RateLimitEnforcer.class)
            .doesNotHaveBean(RateLimiterEndpoint.class));
  }

  @Test
  void runWhenMeterRegistryPresentShouldObserveDecisions() {
    plain.withBean(SimpleMeterRegistry.class).run(context ->
        assertThat(context).hasSingleBean(RateLimitObserver.class));
  }

  @Test
  void runWhenNoMeterRegistryShouldNotObserve() {
    plain.run(context -> assertThat(context).doesNotHaveBean(RateLimitObserver.class));
  }

  @Test
  void runWhenMicrometerMissingShouldNotObserve() {
    plain.withClassLoader(new FilteredClassLoader(MeterRegistry.class)).run(context -> assertThat(context)
        .hasSingleBean(RateLimitEnforcer.class)
        .doesNotHaveBean(RateLimitObserver.class));
  }

  @Test
  void runWhenMetricsDisabledShouldNotObserve() {
    plain.withBean(SimpleMeterRegistry.class).withPropertyValues("ratelimiter.metrics.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean(RateLimitObserver.class));
  }

  @Test
  void runWhenRateLimitingDisabledShouldDefineNoConcern() {
    web.withBean(SimpleMeterRegistry.class)
        .withPropertyValues("ratelimiter.enabled=false", "management.endpoints.web.exposure.include=ratelimiter")
        .run(context -> assertThat(context)
            .doesNotHaveBean(RateLimitEnforcer.class)
            .doesNotHaveBean(RateLimitKeyResolver.class)
            .doesNotHaveBean(AnnotationEnforcement.class)
            .doesNotHaveBean(RateLimiterEndpoint.class)
            .doesNotHaveBean(RateLimitObserver.class));
  }
}
