package io.github.llmratelimiter.autoconfigure.reactive;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterWebProperties;
import io.github.llmratelimiter.autoconfigure.internal.AnnotationEnforcement;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.http.codec.ServerCodecConfigurer;
import org.springframework.web.reactive.DispatcherHandler;
import org.springframework.web.reactive.result.method.annotation.RequestMappingHandlerMapping;
import reactor.core.publisher.Mono;

/**
 * Spring WebFlux auto-configuration, the reactive adapter of the {@link RateLimitGateway}: one
 * {@link org.springframework.web.server.WebFilter} that applies {@code ratelimiter.web.routes}
 * (reading the key, the model and the body as the servlet adapter does, charging without blocking
 * and settling model tokens from the response), key resolution from the exchange ({@link
 * ReactiveRateLimitKeyResolver}), what the {@code @RateLimited} aspect needs to charge a method that
 * returns a {@code Mono} or {@code Flux}, and the problem responses (429, 401, 400, 413, 503), the
 * same bytes as Spring MVC's. Active in a reactive web application with WebFlux (Spring Cloud
 * Gateway's reactive server included), unless {@code ratelimiter.web.enabled=false}.
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass({DispatcherHandler.class, Mono.class})
@ConditionalOnBean(RateLimitGateway.class)
@ConditionalOnBooleanProperty(name = "ratelimiter.web.enabled", matchIfMissing = true)
@EnableConfigurationProperties(RateLimiterWebProperties.class)
public final class RateLimiterReactiveAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterReactiveAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  ReactiveRateLimitKeyResolver reactiveRateLimitKeyResolver() {
    return new DefaultReactiveRateLimitKeyResolver();
  }

  @Bean
  @ConditionalOnMissingBean(ReactiveRateLimitRequestSupport.class)
  ReactiveRateLimitRequestSupport reactiveRateLimitRequestSupport(
      ReactiveRateLimitKeyResolver resolver, RateLimitGateway gateway) {
    return new ExchangeRequestSupport(resolver, gateway);
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitWebFilter rateLimitWebFilter(RateLimitGateway gateway, ReactiveRateLimitKeyResolver resolver,
      RateLimiterWebProperties web, ObjectProvider<ServerCodecConfigurer> codecs,
      ObjectProvider<AnnotationEnforcement> annotations,
      ObjectProvider<RequestMappingHandlerMapping> mappings, BeanFactory beanFactory) {
    return new RateLimitWebFilter(RateLimitRoutes.of(web.getRoutes(),
            gateway.bodyLimits(), new BeanFactoryResolver(beanFactory)), gateway,
        new ExchangeRequestSupport(resolver, gateway), problems(gateway, codecs),
        annotations.getIfAvailable() == null ? null : new AnnotatedHandlerLookup(mappings));
  }

  @Bean
  @ConditionalOnMissingBean
  FoundHandlerMapping rateLimiterFoundHandlerMapping() {
    return new FoundHandlerMapping();
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitedReturnTypes rateLimitedReturnTypes(ObjectProvider<AnnotationEnforcement> annotations,
      ObjectProvider<RequestMappingHandlerMapping> mappings) {
    return new RateLimitedReturnTypes(annotations, mappings);
  }

  @Bean
  @ConditionalOnMissingBean
  ReactiveRateLimitExceptionHandler reactiveRateLimitExceptionHandler(RateLimitGateway gateway) {
    return new ReactiveRateLimitExceptionHandler(gateway);
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitWebExceptionHandler rateLimitWebExceptionHandler(
      RateLimitGateway gateway, ObjectProvider<ServerCodecConfigurer> codecs) {
    return new RateLimitWebExceptionHandler(problems(gateway, codecs));
  }

  /**
   * The writer of problems, with the application's codecs (or the defaults), resolved now: a
   * request thread never waits for them.
   */
  private static ReactiveProblems problems(
      RateLimitGateway gateway, ObjectProvider<ServerCodecConfigurer> codecs) {
    return new ReactiveProblems(gateway, codecs.getIfAvailable(ServerCodecConfigurer::create).getWriters());
  }
}
