package io.github.llmratelimiter.autoconfigure.tomcat;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import org.apache.coyote.AbstractProtocol;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.tomcat.TomcatConnectorCustomizer;
import org.springframework.context.annotation.Bean;

/**
 * Tomcat auto-configuration of the servlet front door: the guard that keeps Tomcat from losing the
 * dispatch of an asynchronous request (a streamed response) when its async-timeout sweep raises a
 * timeout for the request before it on the connection ({@code ratelimiter.web.tomcat-async-timeout-guard},
 * on by default). The front door widens that window, since a request waits for the store's answer
 * before its handler starts async. Active in a servlet web application on Tomcat while the
 * servlet front door is.
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({AbstractProtocol.class, TomcatConnectorCustomizer.class})
@ConditionalOnBean(RateLimitGateway.class)
@ConditionalOnBooleanProperty(name = "ratelimiter.web.enabled", matchIfMissing = true)
@ConditionalOnBooleanProperty(name = "ratelimiter.web.tomcat-async-timeout-guard", matchIfMissing = true)
public final class RateLimiterTomcatAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterTomcatAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean(name = "rateLimiterTomcatAsyncTimeoutGuard")
  TomcatConnectorCustomizer rateLimiterTomcatAsyncTimeoutGuard() {
    return new AsyncTimeoutGuard();
  }
}
