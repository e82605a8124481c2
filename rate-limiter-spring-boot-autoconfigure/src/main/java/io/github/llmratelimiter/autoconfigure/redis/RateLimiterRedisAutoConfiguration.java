package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.StoreFailure;
import io.github.llmratelimiter.redis.FailurePolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.resource.ClientResources;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
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
import org.springframework.boot.data.redis.autoconfigure.DataRedisProperties;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.context.annotation.Bean;

/**
 * The Redis store, when {@code ratelimiter.store=redis} and rate-limiter-redis and Lettuce are on
 * the class path: a {@link RedisRateLimitStore} on the application's Redis connection (Boot's
 * {@link DataRedisConnectionDetails}, that is {@code spring.data.redis.*}: a standalone server, a
 * master found through Sentinel, or a Cluster), sharing Boot's Lettuce {@link ClientResources},
 * with the {@code ratelimiter.redis.*} settings. It runs before {@link
 * RateLimiterAutoConfiguration}, whose in-memory store then backs off; an application's own {@link
 * RateLimitStore} bean wins over both.
 *
 * <p>TLS follows Boot: on with {@code spring.data.redis.ssl.enabled} (trusting the SSL bundle {@code
 * spring.data.redis.ssl.bundle}, or the JVM's defaults) or a {@code rediss://} URL, with the
 * server's certificate and host name verified, for the server, the Cluster's nodes or the master
 * and its sentinels alike. The store keeps its own connection with its own short command timeout
 * ({@code ratelimiter.redis.command-timeout}); {@code spring.data.redis.timeout} and the pool
 * settings do not apply to it. A static master/replica connection is rejected at start-up.
 */
@AutoConfiguration(after = DataRedisAutoConfiguration.class, before = RateLimiterAutoConfiguration.class)
@ConditionalOnClass({RedisRateLimitStore.class, RedisClient.class, DataRedisConnectionDetails.class})
@ConditionalOnBooleanProperty(name = "ratelimiter.enabled", matchIfMissing = true)
@ConditionalOnProperty(prefix = "ratelimiter", name = "store", havingValue = "redis")
@EnableConfigurationProperties({RateLimiterProperties.class, RateLimiterRedisProperties.class})
public final class RateLimiterRedisAutoConfiguration {

  private static final Log LOG = LogFactory.getLog(RateLimiterRedisAutoConfiguration.class);
  private static final String PREFIX = "ratelimiter.redis.";
  private static final String DURATION_RANGE = "a positive duration, for example 250ms or 1s";

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterRedisAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean(RateLimitStore.class)
  @ConditionalOnBean(DataRedisConnectionDetails.class)
  RedisRateLimitStore rateLimitStore(DataRedisConnectionDetails connection,
      ObjectProvider<DataRedisProperties> redisProperties,
      ObjectProvider<ClientResources> clientResources, ObjectProvider<InstantSource> wallClock,
      RateLimiterProperties properties, RateLimiterRedisProperties redis) {
    Duration timeout = positive("command-timeout", redis.getCommandTimeout());
    Duration maxWait = redis.getMaxWait() == null ? null : positive("max-wait", redis.getMaxWait());
    if (maxWait != null && maxWait.compareTo(timeout) < 0) {
      throw new InvalidRateLimitPropertyException(PREFIX + "max-wait", maxWait,
          "a duration of at least ratelimiter.redis.command-timeout (" + timeout + ")");
    }
    Duration retry = positive("retry-interval", redis.getRetryInterval());
    Duration heartbeat = positive("heartbeat-interval", redis.getHeartbeatInterval());
    Duration slotLease = positive("slot-lease", redis.getSlotLease());
    if (slotLease.compareTo(ConcurrencyLimit.MAX_LEASE) > 0) {
      throw new InvalidRateLimitPropertyException(PREFIX + "slot-lease", slotLease,
          "a positive duration of at most " + ConcurrencyLimit.MAX_LEASE.toHours() + "h");
    }
    RateLimiterRedisProperties.CircuitBreaker breaker = redis.getCircuitBreaker();
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
    DataRedisProperties data = redisProperties.getIfAvailable();
    RedisRateLimitStore.Builder builder = builder(connection, data != null && usesTls(data.getUrl()));
    try {
      builder.keyPrefix(redis.getKeyPrefix());
    } catch (IllegalArgumentException e) {
      throw new InvalidRateLimitPropertyException(PREFIX + "key-prefix", redis.getKeyPrefix(),
          "a non-blank prefix without whitespace or any of %{}*?[]\\");
    }
    builder.commandTimeout(timeout)
        .retryInterval(retry)
        .heartbeatInterval(heartbeat)
        .slotLease(slotLease)
        .circuitBreaker(rate, window, minimum, probes)
        .failurePolicy(failurePolicy(properties, redis))
        .hashKeys(redis.isHashKeys())
        .traceCommands(redis.isTraceCommands());
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
    InstantSource clock = wallClock.getIfUnique();
    if (clock != null) {
      builder.wallClock(clock);
    }
    return builder.build();
  }

  /**
   * What answers while Redis does not: {@code ratelimiter.store-failure}, unless the deprecated
   * {@code ratelimiter.redis.failure-policy} is set, which keeps its meaning.
   */
  @SuppressWarnings("deprecation")
  static FailurePolicy failurePolicy(RateLimiterProperties properties,
      RateLimiterRedisProperties redis) {
    RateLimiterRedisProperties.FailurePolicy deprecated = redis.getFailurePolicy();
    if (deprecated != null) {
      LOG.warn("ratelimiter.redis.failure-policy is deprecated: set ratelimiter.store-failure"
          + " instead (fail-open is allow, fail-closed is deny, local-fallback is local-fallback)");
      return FailurePolicy.valueOf(deprecated.name());
    }
    StoreFailure storeFailure = properties.getStoreFailure();
    if (storeFailure == null) {
      throw new InvalidRateLimitPropertyException(
          "ratelimiter.store-failure", null, "local-fallback, deny or allow");
    }
    return switch (storeFailure) {
      case DENY -> FailurePolicy.FAIL_CLOSED;
      case ALLOW -> FailurePolicy.FAIL_OPEN;
      case LOCAL_FALLBACK -> FailurePolicy.LOCAL_FALLBACK;
    };
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

  /**
   * A builder for the standalone server, the Sentinel-managed master or the Cluster the connection
   * details describe, over TLS when they have an SSL bundle or {@code tlsByUrl}.
   */
  static RedisRateLimitStore.Builder builder(DataRedisConnectionDetails connection, boolean tlsByUrl) {
    DataRedisConnectionDetails.MasterReplica masterReplica = connection.getMasterReplica();
    if (masterReplica != null) {
      throw new InvalidRateLimitPropertyException("spring.data.redis.masterreplica.nodes",
          masterReplica.getNodes().stream().map(n -> n.host() + ":" + n.port())
              .collect(Collectors.joining(",")),
          "unset while ratelimiter.store=redis: the Redis rate-limit store connects to a standalone"
              + " server, a master through Sentinel or a Cluster, not static master/replica (use"
              + " Sentinel, ratelimiter.store=memory, or your own RateLimitStore bean)");
    }
    SslBundle bundle = connection.getSslBundle();
    boolean tls = bundle != null || tlsByUrl;
    String username = connection.getUsername();
    String password = connection.getPassword();
    RedisRateLimitStore.Builder builder;
    DataRedisConnectionDetails.Sentinel sentinel = connection.getSentinel();
    DataRedisConnectionDetails.Cluster cluster = connection.getCluster();
    if (sentinel != null) {
      RedisURI.Builder uri = credentials(RedisURI.builder(), username, password)
          .withSentinelMasterId(sentinel.getMaster())
          .withDatabase(sentinel.getDatabase())
          .withSsl(tls);
      for (DataRedisConnectionDetails.Node node : sentinel.getNodes()) {
        uri.withSentinel(node(node, sentinel.getUsername(), sentinel.getPassword(), 0, tls));
      }
      builder = RedisRateLimitStore.builder(uri.build());
    } else if (cluster != null) {
      List<RedisURI> seeds = new ArrayList<>();
      for (DataRedisConnectionDetails.Node node : cluster.getNodes()) {
        seeds.add(node(node, username, password, 0, tls));
      }
      builder = RedisRateLimitStore.cluster(seeds);
    } else {
      DataRedisConnectionDetails.Standalone standalone = connection.getStandalone();
      builder = RedisRateLimitStore.builder(node(
          new DataRedisConnectionDetails.Node(standalone.getHost(), standalone.getPort()),
          username, password, standalone.getDatabase(), tls));
    }
    if (bundle != null) {
      builder.sslOptions(sslOptions(bundle));
    }
    return builder;
  }

  /** Lettuce's TLS options from a Boot SSL bundle, as Boot builds them for its own client. */
  static SslOptions sslOptions(SslBundle bundle) {
    SslOptions.Builder ssl = SslOptions.builder()
        .keyManager(bundle.getManagers().getKeyManagerFactory())
        .trustManager(bundle.getManagers().getTrustManagerFactory());
    org.springframework.boot.ssl.SslOptions options = bundle.getOptions();
    if (options.getCiphers() != null) {
      ssl.cipherSuites(options.getCiphers());
    }
    if (options.getEnabledProtocols() != null) {
      ssl.protocols(options.getEnabledProtocols());
    }
    return ssl.build();
  }

  /** Whether {@code spring.data.redis.url} asks for TLS, as Boot reads it (scheme {@code rediss}). */
  private static boolean usesTls(@Nullable String url) {
    return url != null && url.regionMatches(true, 0, "rediss:", 0, "rediss:".length());
  }

  private static RedisURI node(DataRedisConnectionDetails.Node node, @Nullable String username,
      @Nullable String password, int database, boolean tls) {
    return credentials(RedisURI.builder(), username, password)
        .withHost(node.host()).withPort(node.port()).withDatabase(database).withSsl(tls).build();
  }

  private static RedisURI.Builder credentials(RedisURI.Builder uri, @Nullable String username,
      @Nullable String password) {
    if (password != null) {
      if (username != null) {
        uri.withAuthentication(username, password.toCharArray());
      } else {
        uri.withPassword(password.toCharArray());
      }
    }
    return uri;
  }
}
