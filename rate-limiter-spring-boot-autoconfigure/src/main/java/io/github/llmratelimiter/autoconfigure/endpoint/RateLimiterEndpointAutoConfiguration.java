package io.github.llmratelimiter.autoconfigure.endpoint;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties;
import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.gateway.internal.KeyIds;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import java.nio.charset.StandardCharsets;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Actuator auto-configuration: the {@code ratelimiter} endpoint, when Actuator is on the class
 * path and the endpoint is available (exposed and not disabled), and the {@link KeyIds} it shows
 * for API keys: under {@code ratelimiter.key-id-secret} (at least 16 bytes, else start-up fails
 * naming the property), or, when it is unset, under a random secret of this instance (with a
 * warning when {@code ratelimiter.store=redis}, since instances sharing Redis then show different
 * ids for one key).
 */
@AutoConfiguration(after = RateLimiterAutoConfiguration.class)
@ConditionalOnClass({Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(RateLimitEnforcer.class)
@ConditionalOnAvailableEndpoint(RateLimiterEndpoint.class)
public final class RateLimiterEndpointAutoConfiguration {

  private static final Log LOG = LogFactory.getLog(RateLimiterEndpointAutoConfiguration.class);
  private static final String SECRET = "ratelimiter.key-id-secret";

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterEndpointAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  KeyIds rateLimiterKeyIds(RateLimiterProperties properties) {
    String secret = properties.getKeyIdSecret();
    if (secret == null) {
      if (properties.getStore() == RateLimiterProperties.StoreType.REDIS) {
        LOG.warn(SECRET + " is not set: the Actuator endpoint 'ratelimiter' identifies API keys by"
            + " ids under a random secret of this instance, so instances sharing Redis show different"
            + " ids for one key and find a key only by the ids they showed themselves. Set the same "
            + SECRET + " (at least " + KeyIds.MIN_SECRET_BYTES + " bytes) on every instance.");
      }
      return KeyIds.random();
    }
    try {
      return KeyIds.of(secret);
    } catch (IllegalArgumentException e) {
      // the value is a secret: the failure names its length only
      throw new InvalidRateLimitPropertyException(SECRET,
          "(hidden, " + secret.getBytes(StandardCharsets.UTF_8).length + " bytes)",
          "a secret of at least " + KeyIds.MIN_SECRET_BYTES + " bytes (UTF-8), the same on every"
              + " instance that shares the store");
    }
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimiterEndpoint rateLimiterEndpoint(
      RateLimitEnforcer enforcer, KeyIds keyIds, RateLimiterProperties properties) {
    return new RateLimiterEndpoint(enforcer.store(), enforcer.policies(), enforcer.planResolver(), keyIds,
        properties.getEndpoint().getTop(), properties.getEndpoint().getMaxTop(),
        enforcer.upstreamRoutes(), enforcer.waitingRoom());
  }
}
