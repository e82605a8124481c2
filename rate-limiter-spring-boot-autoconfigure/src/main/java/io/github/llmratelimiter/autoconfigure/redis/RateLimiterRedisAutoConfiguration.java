package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.redis.FailurePolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.resource.ClientResources;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.context.annotation.Bean;

/**
 * The Redis store, when {@code ratelimiter.store=redis} and rate-limiter-redis and Lettuce are on
 * the class path: a {@link RedisRateLimitStore} on the application's Redis connection (Boot's
 * {@link DataRedisConnectionDetails}, that is {@code spring.data.redis.*}: a standalone server or a
 * Cluster), sharing Boot's Lettuce {@link ClientResources}, with the {@code ratelimiter.redis.*}
 * settings. It runs before {@link RateLimiterAutoConfiguration}, whose in-memory store then backs
 * off; an application's own {@link RateLimitStore} bean wins over both.
 *
 * <p>The store keeps its own connection with its own short command timeout ({@code
 * ratelimiter.redis.command-timeout}); {@code spring.data.redis.timeout} and the pool settings do
 * not apply to it. Sentinel, static master/replica and TLS connections are rejected at start-up.
 */
@AutoConfiguration(after = DataRedisAutoConfiguration.class, before = RateLimiterAutoConfiguration.class)
@ConditionalOnClass({RedisRateLimitStore.class, RedisClient.class, DataRedisConnectionDetails.class})
@ConditionalOnBooleanProperty(name = "ratelimiter.enabled", matchIfMissing = true)
@ConditionalOnProperty(prefix = "ratelimiter", name = "store", havingValue = "redis")
@EnableConfigurationProperties(RateLimiterProperties.class)
public final class RateLimiterRedisAutoConfiguration {

  private static final String PREFIX = "ratelimiter.redis.";
  private static final String DURATION_RANGE = "a positive duration, for example 250ms or 1s";

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterRedisAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean(RateLimitStore.class)
  @ConditionalOnBean(DataRedisConnectionDetails.class)
  RedisRateLimitStore rateLimitStore(DataRedisConnectionDetails connection,
      ObjectProvider<ClientResources> clientResources, RateLimiterProperties properties) {
    RateLimiterProperties.Redis redis = properties.getRedis();
    Duration timeout = positive("command-timeout", redis.getCommandTimeout());
    Duration maxWait = redis.getMaxWait() == null ? null : positive("max-wait", redis.getMaxWait());
    if (maxWait != null && maxWait.compareTo(timeout) < 0) {
      throw new InvalidRateLimitPropertyException(PREFIX + "max-wait", maxWait,
          "a duration of at least ratelimiter.redis.command-timeout (" + timeout + ")");
    }
    Duration retry = positive("retry-interval", redis.getRetryInterval());
    Duration heartbeat = positive("heartbeat-interval", redis.getHeartbeatInterval());
    RateLimiterProperties.Redis.CircuitBreaker breaker = redis.getCircuitBreaker();
    float rate = breaker.getFailureRateThreshold();
    if (!(rate > 0 && rate <= 100)) {
      throw new InvalidRateLimitPropertyException(PREFIX + "circuit-breaker.failure-rate-threshold",
          rate, "a percentage above 0 and at most 100");
    }
    int window = atLeastOne("circuit-breaker.sliding-window-size", breaker.getSlidingWindowSize());
    int minimum = atLeastOne("circuit-breaker.minimum-number-of-calls",
        breaker.getMinimumNumberOfCalls());
    if (minimum > window) {
      throw new InvalidRateLimitPropertyException(PREFIX + "circuit-breaker.minimum-number-of-calls",
          minimum, "an integer from 1 to ratelimiter.redis.circuit-breaker.sliding-window-size ("
              + window + ")");
    }
    int probes = atLeastOne("circuit-breaker.permitted-calls-in-half-open-state",
        breaker.getPermittedCallsInHalfOpenState());
    RedisRateLimitStore.Builder builder = builder(connection);
    try {
      builder.keyPrefix(redis.getKeyPrefix());
    } catch (IllegalArgumentException e) {
      throw new InvalidRateLimitPropertyException(PREFIX + "key-prefix", redis.getKeyPrefix(),
          "a non-blank prefix without whitespace or any of %{}*?[]\\");
    }
    builder.commandTimeout(timeout)
        .retryInterval(retry)
        .heartbeatInterval(heartbeat)
        .circuitBreaker(rate, window, minimum, probes)
        .failurePolicy(FailurePolicy.valueOf(redis.getFailurePolicy().name()))
        .hashKeys(redis.isHashKeys());
    if (maxWait != null) {
      builder.maxWait(maxWait);
    }
    String secret = properties.getKeyIdSecret();
    if (secret != null) {
      byte[] bytes = secret.getBytes(StandardCharsets.UTF_8);
      try {
        builder.hashSecret(bytes);
      } catch (IllegalArgumentException e) {
        // the value is a secret: the failure names its length only
        throw new InvalidRateLimitPropertyException("ratelimiter.key-id-secret",
            "(hidden, " + bytes.length + " bytes)", "a secret of at least 16 bytes (UTF-8), the"
                + " same on every instance that shares the store");
      }
    }
    ClientResources resources = clientResources.getIfUnique();
    if (resources != null) {
      builder.clientResources(resources);
    }
    return builder.build();
  }

  private static int atLeastOne(String name, int value) {
    if (value < 1) {
      throw new InvalidRateLimitPropertyException(PREFIX + name, value, "an integer of at least 1");
    }
    return value;
  }

  private static Duration positive(String name, @Nullable Duration value) {
    if (value == null || value.isNegative() || value.isZero()) {
      throw new InvalidRateLimitPropertyException(PREFIX + name, value, DURATION_RANGE);
    }
    return value;
  }

  /** A builder for the standalone server or the Cluster the connection details describe. */
  static RedisRateLimitStore.Builder builder(DataRedisConnectionDetails connection) {
    if (connection.getSentinel() != null) {
      throw unsupported("spring.data.redis.sentinel.master", connection.getSentinel().getMaster(),
          "Sentinel");
    }
    if (connection.getMasterReplica() != null) {
      throw unsupported("spring.data.redis.masterreplica.nodes",
          connection.getMasterReplica().getNodes(), "static master/replica");
    }
    if (connection.getSslBundle() != null) {
      throw unsupported("spring.data.redis.ssl.enabled", true, "TLS");
    }
    DataRedisConnectionDetails.Cluster cluster = connection.getCluster();
    if (cluster != null) {
      List<RedisURI> seeds = new ArrayList<>();
      for (DataRedisConnectionDetails.Node node : cluster.getNodes()) {
        seeds.add(uri(connection, node.host(), node.port(), 0));
      }
      return RedisRateLimitStore.cluster(seeds);
    }
    DataRedisConnectionDetails.Standalone standalone = connection.getStandalone();
    return RedisRateLimitStore.builder(
        uri(connection, standalone.getHost(), standalone.getPort(), standalone.getDatabase()));
  }

  private static RedisURI uri(DataRedisConnectionDetails connection, String host, int port, int database) {
    RedisURI.Builder uri = RedisURI.builder().withHost(host).withPort(port).withDatabase(database);
    String password = connection.getPassword();
    if (password != null) {
      String username = connection.getUsername();
      if (username != null) {
        uri.withAuthentication(username, password.toCharArray());
      } else {
        uri.withPassword(password.toCharArray());
      }
    }
    return uri.build();
  }

  private static InvalidRateLimitPropertyException unsupported(String property, Object value, String what) {
    return new InvalidRateLimitPropertyException(property, value, "unset while ratelimiter.store=redis:"
        + " the Redis rate-limit store connects to a standalone server or a Cluster, not " + what
        + " (use ratelimiter.store=memory, or your own RateLimitStore bean)");
  }
}
