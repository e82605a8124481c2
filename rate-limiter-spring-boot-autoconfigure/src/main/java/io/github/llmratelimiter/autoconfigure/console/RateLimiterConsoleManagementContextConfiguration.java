package io.github.llmratelimiter.autoconfigure.console;

import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpoint;
import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import jakarta.servlet.http.HttpServlet;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.autoconfigure.endpoint.expose.EndpointExposure;
import org.springframework.boot.actuate.autoconfigure.web.ManagementContextConfiguration;
import org.springframework.boot.actuate.autoconfigure.web.ManagementContextType;
import org.springframework.boot.actuate.endpoint.EndpointId;
import org.springframework.boot.actuate.endpoint.web.ExposableWebEndpoint;
import org.springframework.boot.actuate.endpoint.web.PathMappedEndpoints;
import org.springframework.boot.actuate.endpoint.web.WebEndpointHttpMethod;
import org.springframework.boot.actuate.endpoint.web.WebOperation;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.server.WebFilter;

/**
 * The operator's console on the management server, when {@code ratelimiter.console.enabled=true}
 * and the Actuator endpoint {@code ratelimiter} is available over HTTP: so the page lives where the
 * endpoint lives (the management port and address when they are set apart, else the application's)
 * and behind the same security. On the servlet stack a servlet answers {@code
 * /ratelimiter/console/*}; on WebFlux a filter does. The page is told the endpoint's path, the
 * metrics and health endpoints' paths when they are exposed, and whether the endpoint grants its
 * write operations. A refresh interval ({@code ratelimiter.console.refresh}) outside 500ms to 1m
 * fails start-up naming the property.
 */
@ManagementContextConfiguration(value = ManagementContextType.ANY, proxyBeanMethods = false)
@ConditionalOnBooleanProperty("ratelimiter.console.enabled")
@ConditionalOnAvailableEndpoint(endpoint = RateLimiterEndpoint.class, exposure = EndpointExposure.WEB)
@EnableConfigurationProperties(ConsoleProperties.class)
public final class RateLimiterConsoleManagementContextConfiguration {

  /** Creates the configuration; Spring instantiates it. */
  RateLimiterConsoleManagementContextConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  ConsolePage rateLimiterConsolePage(ConsoleProperties properties,
      ObjectProvider<PathMappedEndpoints> endpoints) {
    Duration refresh = properties.getRefresh();
    if (refresh == null || refresh.compareTo(ConsoleProperties.MIN_REFRESH) < 0
        || refresh.compareTo(ConsoleProperties.MAX_REFRESH) > 0) {
      throw new InvalidRateLimitPropertyException("ratelimiter.console.refresh", refresh,
          "a duration from 500ms to 1m");
    }
    return new ConsolePage(links(endpoints.getIfAvailable()), refresh.toMillis());
  }

  /** What the page needs to know of the exposed endpoints. */
  static ConsolePage.ConsoleLinks links(@Nullable PathMappedEndpoints endpoints) {
    if (endpoints == null) {
      return new ConsolePage.ConsoleLinks(null, null, null, false, false);
    }
    EndpointId id = EndpointId.of("ratelimiter");
    boolean reset = false;
    boolean assign = false;
    if (endpoints.getEndpoint(id) instanceof ExposableWebEndpoint web) {
      for (WebOperation operation : web.getOperations()) {
        WebEndpointHttpMethod method = operation.getRequestPredicate().getHttpMethod();
        reset |= method == WebEndpointHttpMethod.DELETE;
        assign |= method == WebEndpointHttpMethod.POST;
      }
    }
    return new ConsolePage.ConsoleLinks(endpoints.getPath(id), endpoints.getPath(EndpointId.of("metrics")),
        endpoints.getPath(EndpointId.of("health")), reset, assign);
  }

  /** The servlet stack: a servlet mapped to the console's paths. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass(HttpServlet.class)
  static final class Servlet {

    @Bean
    @ConditionalOnMissingBean(name = "rateLimiterConsoleServlet")
    ServletRegistrationBean<ConsoleServlet> rateLimiterConsoleServlet(ConsolePage page) {
      ServletRegistrationBean<ConsoleServlet> registration =
          new ServletRegistrationBean<>(new ConsoleServlet(page), ConsolePage.PATH + "/*");
      registration.setName("rateLimiterConsole");
      return registration;
    }
  }

  /** WebFlux: a filter that answers the console's paths. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
  @ConditionalOnClass(WebFilter.class)
  static final class Reactive {

    @Bean
    @ConditionalOnMissingBean
    ConsoleWebFilter rateLimiterConsoleFilter(ConsolePage page) {
      return new ConsoleWebFilter(page);
    }
  }
}
