package io.github.llmratelimiter.autoconfigure.servlet;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterWebProperties;
import io.github.llmratelimiter.autoconfigure.internal.AnnotationEnforcement;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRoutes;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import jakarta.servlet.http.HttpServletRequest;
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
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Spring MVC auto-configuration, the servlet adapter of the {@link RateLimitGateway}: the route
 * interceptor ({@code ratelimiter.web.routes}), key resolution from the request, the filter that
 * lets the limiter read a request body before the handler (a JSON body's model, its model-token
 * estimate and checks, the size of a chunked body), the filter that settles reserved model tokens
 * from the response's usage, and the problem responses (429, 401, 400, 413, 503). Each part
 * translates the servlet request into gateway calls and the gateway's headers and problems back
 * into the response. Active in a servlet web application with Spring MVC, unless {@code
 * ratelimiter.web.enabled=false}.
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({DispatcherServlet.class, HttpServletRequest.class})
@ConditionalOnBean(RateLimitGateway.class)
@ConditionalOnBooleanProperty(name = "ratelimiter.web.enabled", matchIfMissing = true)
@EnableConfigurationProperties(RateLimiterWebProperties.class)
public final class RateLimiterServletAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterServletAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  RateLimitKeyResolver rateLimitKeyResolver() {
    return new DefaultRateLimitKeyResolver();
  }

  @Bean
  @ConditionalOnMissingBean(RateLimitRequestSupport.class)
  RateLimitRequestSupport rateLimitRequestSupport(
      RateLimitKeyResolver resolver, RateLimitGateway gateway) {
    return new ServletRateLimitRequestSupport(resolver, gateway);
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitExceptionHandler rateLimitExceptionHandler(RateLimitGateway gateway) {
    return new RateLimitExceptionHandler(gateway);
  }

  @Bean
  @ConditionalOnMissingBean(name = "rateLimitWebMvcConfigurer")
  WebMvcConfigurer rateLimitWebMvcConfigurer(RateLimitGateway gateway, RateLimitKeyResolver resolver,
      RateLimiterWebProperties web, ObjectProvider<AnnotationEnforcement> annotations,
      BeanFactory beanFactory) {
    RateLimitRoutes routes = RateLimitRoutes.of(web.getRoutes(), gateway.bodyLimits(),
        new BeanFactoryResolver(beanFactory));
    return new WebMvcConfigurer() {
      @Override
      public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(new RateLimitInterceptor(routes, gateway,
            new ServletRateLimitRequestSupport(resolver, gateway), annotations.getIfAvailable() != null));
      }
    };
  }

  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnBooleanProperty(name = "ratelimiter.web.model-from-body", matchIfMissing = true)
  ModelPeekingFilter rateLimitModelPeekingFilter(RateLimitGateway gateway) {
    return new ModelPeekingFilter(gateway);
  }

  @Bean
  @ConditionalOnMissingBean
  ModelTokenUsageFilter rateLimitModelTokenUsageFilter(RateLimitGateway gateway) {
    return new ModelTokenUsageFilter(gateway);
  }
}
