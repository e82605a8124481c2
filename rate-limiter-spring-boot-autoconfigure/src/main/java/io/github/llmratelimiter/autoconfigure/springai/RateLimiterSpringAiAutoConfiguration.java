package io.github.llmratelimiter.autoconfigure.springai;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.springai.ChatClientKeyResolver;
import io.github.llmratelimiter.springai.RateLimitAdvisor;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Spring AI auto-configuration: a {@link RateLimitAdvisor} bean, which a {@code ChatClient} adds to
 * its advisors ({@code ChatClient.builder(model).defaultAdvisors(rateLimitAdvisor)}), charging its
 * calls through the application's {@link RateLimitGateway} (its policies, store, quotas, estimator
 * and metrics), and the {@link ChatClientKeyResolver} that finds each call's caller (by default the
 * authenticated principal, else the call's {@link RateLimitAdvisor#CALLER} parameter). Active when
 * Spring AI's {@code ChatClient} and the advisor are on the class path, unless {@code
 * ratelimiter.spring-ai.enabled=false}. A {@code ratelimiter.spring-ai.policy} that names no policy
 * fails start-up naming the property.
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class)
@ConditionalOnClass({ChatClient.class, RateLimitAdvisor.class})
@ConditionalOnBean(RateLimitGateway.class)
@ConditionalOnBooleanProperty(name = "ratelimiter.spring-ai.enabled", matchIfMissing = true)
@EnableConfigurationProperties(RateLimiterSpringAiProperties.class)
public final class RateLimiterSpringAiAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterSpringAiAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  ChatClientKeyResolver chatClientKeyResolver() {
    return ChatClientKeyResolver.defaults();
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitAdvisor rateLimitAdvisor(RateLimitGateway gateway, ModelTokenEstimator estimator,
      ChatClientKeyResolver keys, RateLimiterSpringAiProperties properties) {
    RateLimitAdvisor.Builder advisor = RateLimitAdvisor.builder(gateway).estimator(estimator)
        .keyResolver(keys);
    String policy = properties.getPolicy();
    if (policy != null) {
      RateLimitPolicies policies = gateway.enforcer().policies();
      if (!policies.contains(policy)) {
        throw new InvalidRateLimitPropertyException("ratelimiter.spring-ai.policy", policy,
            "a policy defined under ratelimiter.policies, one of " + policies.all().keySet());
      }
      advisor.policy(policy);
    }
    return advisor.build();
  }
}
