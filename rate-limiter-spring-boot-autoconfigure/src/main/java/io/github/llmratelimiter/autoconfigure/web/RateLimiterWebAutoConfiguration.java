package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.AnnotationEnforcement;
import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.autoconfigure.ModelTokenEstimator;
import io.github.llmratelimiter.autoconfigure.RateLimitEnforcer;
import io.github.llmratelimiter.autoconfigure.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;
import org.springframework.web.util.pattern.PatternParseException;

/**
 * Spring MVC auto-configuration: the route interceptor ({@code ratelimiter.web.routes}), key
 * resolution from the request, the filter that lets the limiter read a request body before the
 * handler (a JSON body's model, its model-token estimate and checks, the size of a chunked body),
 * the filter that settles reserved model tokens from the response's usage, and the problem
 * responses (429, 401, 400, 413, 503). Active in a servlet web application with Spring MVC, unless {@code
 * ratelimiter.web.enabled=false}.
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({DispatcherServlet.class, HttpServletRequest.class})
@ConditionalOnBean(RateLimitEnforcer.class)
@ConditionalOnBooleanProperty(name = "ratelimiter.web.enabled", matchIfMissing = true)
public final class RateLimiterWebAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterWebAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  RateLimitKeyResolver rateLimitKeyResolver() {
    return new DefaultRateLimitKeyResolver();
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitProblemFactory rateLimitProblemFactory(RateLimiterProperties properties) {
    String type = properties.getWeb().getProblemType();
    try {
      return new DefaultRateLimitProblemFactory(new URI(type));
    } catch (java.net.URISyntaxException e) {
      throw new InvalidRateLimitPropertyException("ratelimiter.web.problem-type", type, "a URI");
    }
  }

  @Bean
  @ConditionalOnMissingBean(RateLimitRequestSupport.class)
  RateLimitRequestSupport rateLimitRequestSupport(RateLimitKeyResolver resolver,
      RateLimiterProperties properties, ModelTokenEstimator estimator) {
    return support(resolver, properties, estimator);
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitExceptionHandler rateLimitExceptionHandler(RateLimitProblemFactory problems) {
    return new RateLimitExceptionHandler(problems);
  }

  @Bean
  @ConditionalOnMissingBean(name = "rateLimitWebMvcConfigurer")
  WebMvcConfigurer rateLimitWebMvcConfigurer(RateLimitEnforcer enforcer, RateLimitKeyResolver resolver,
      RateLimiterProperties properties, ModelTokenEstimator estimator,
      ObjectProvider<AnnotationEnforcement> annotations) {
    List<RateLimitInterceptor.Route> routes =
        routes(properties.getWeb().getRoutes(), BodyLimits.of(properties.getWeb()));
    return new WebMvcConfigurer() {
      @Override
      public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(new RateLimitInterceptor(routes, enforcer,
            support(resolver, properties, estimator), annotations.getIfAvailable() != null));
      }
    };
  }

  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnBooleanProperty(name = "ratelimiter.web.model-from-body", matchIfMissing = true)
  ModelPeekingFilter rateLimitModelPeekingFilter(RateLimiterProperties properties) {
    return new ModelPeekingFilter(BodyLimits.of(properties.getWeb()));
  }

  @Bean
  @ConditionalOnMissingBean
  ModelTokenUsageFilter rateLimitModelTokenUsageFilter() {
    return new ModelTokenUsageFilter();
  }

  private static ServletRateLimitRequestSupport support(RateLimitKeyResolver resolver,
      RateLimiterProperties properties, ModelTokenEstimator estimator) {
    return new ServletRateLimitRequestSupport(resolver, properties.getMissingKey(),
        properties.getAnonymousKey(), estimator, BodyLimits.of(properties.getWeb()));
  }

  private static List<RateLimitInterceptor.Route> routes(
      List<RateLimiterProperties.Route> configured, BodyLimits limits) {
    List<RateLimitInterceptor.Route> routes = new ArrayList<>();
    for (int i = 0; i < configured.size(); i++) {
      RateLimiterProperties.Route r = configured.get(i);
      String path = "ratelimiter.web.routes[" + i + "]";
      if (r.getInclude().isEmpty()) {
        throw new InvalidRateLimitPropertyException(
            path + ".include", null, "at least one path pattern, for example /v1/**");
      }
      routes.add(new RateLimitInterceptor.Route(
          patterns(path + ".include", r.getInclude()), patterns(path + ".exclude", r.getExclude()),
          r.getPolicy(), limits.modelSource(path + ".model-source", r.getModelSource())));
    }
    return routes;
  }

  private static List<PathPattern> patterns(String path, List<String> patterns) {
    List<PathPattern> parsed = new ArrayList<>();
    for (int j = 0; j < patterns.size(); j++) {
      try {
        parsed.add(PathPatternParser.defaultInstance.parse(patterns.get(j)));
      } catch (PatternParseException e) {
        throw new InvalidRateLimitPropertyException(path + "[" + j + "]", patterns.get(j),
            "a Spring path pattern, for example /v1/** (" + e.getMessage() + ")");
      }
    }
    return parsed;
  }
}
