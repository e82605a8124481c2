package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.MaintenanceScheduler;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.gateway.DefaultRateLimitProblemFactory;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.ProviderHeaders;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitPlanResolver;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitProblemFactory;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import io.github.llmratelimiter.gateway.UpstreamWaits;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.time.InstantSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.env.Environment;

/**
 * Core auto-configuration, for every application whatever its web stack (or none): binds {@code
 * ratelimiter.*}, resolves the policies, and provides the {@link RateLimitStore} (in-memory unless
 * another auto-configuration or the application defines one), the {@link ModelTokenEstimator} of the
 * tokens-per-window budgets, the {@link RateLimitPlanResolver} of each API key's plan (the
 * store's assignment, else {@code ratelimiter.default-plan}, cached for {@code
 * ratelimiter.plan-refresh}), the {@link UpstreamRoutes} of {@code ratelimiter.upstreams} (which
 * provider account each call goes to), the {@link UpstreamWaitingRoom} where calls wait for an
 * upstream (when upstreams are configured), the {@link RateLimitEnforcer}, the {@link
 * RateLimitProblemFactory}
 * and the {@link RateLimitGateway}: the one charge step every front door (servlet, reactive,
 * aspect) calls.
 *
 * <p>The in-memory store reads time from the application's {@link Ticker} bean when there is one
 * (tests drive time with it), else from the system ticker, and the calendar of its quotas from the
 * application's {@link InstantSource} bean, else the system clock. With {@code
 * ratelimiter.quota-file} set, its quota counters are read from that file at start-up and written
 * to it every {@code ratelimiter.quota-file-interval} and at shutdown ({@link
 * QuotaFileLifecycle}). Its maintenance (idle keys dropped, the
 * busiest ranked) runs every {@code ratelimiter.in-memory.maintenance-interval} on the shared
 * maintenance thread, or on the application's {@link MaintenanceScheduler} bean when there is one;
 * closing the context closes the store, which stops it. A distributed store's auto-configuration
 * runs before this one and defines its own {@code RateLimitStore} bean, which then wins.
 */
@AutoConfiguration
@ConditionalOnBooleanProperty(name = "ratelimiter.enabled", matchIfMissing = true)
@EnableConfigurationProperties({RateLimiterProperties.class, RateLimiterWebProperties.class})
public final class RateLimiterAutoConfiguration {

  /** Creates the auto-configuration; Spring instantiates it. */
  RateLimiterAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean
  RateLimitPolicies rateLimitPolicies(RateLimiterProperties properties,
      RateLimiterWebProperties web) {
    return PropertiesTranslation.policies(properties, web);
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitStore rateLimitStore(ObjectProvider<Ticker> ticker,
      ObjectProvider<InstantSource> wallClock, ObjectProvider<MaintenanceScheduler> scheduler,
      RateLimiterProperties properties) {
    if (properties.getStore() == RateLimiterProperties.StoreType.REDIS) {
      // the Redis auto-configuration did not define the store: its classes are missing
      throw new InvalidRateLimitPropertyException("ratelimiter.store", "redis", "memory, or redis"
          + " with io.github.llmratelimiter:rate-limiter-redis and"
          + " org.springframework.boot:spring-boot-starter-data-redis (Lettuce) on the class path");
    }
    Duration interval = properties.getInMemory().getMaintenanceInterval();
    if (interval == null || interval.isNegative() || interval.isZero()
        || interval.compareTo(Duration.ofNanos(Long.MAX_VALUE)) > 0) {
      throw new InvalidRateLimitPropertyException(
          "ratelimiter.in-memory.maintenance-interval", interval, "a positive duration, for example 1s");
    }
    return RateLimitStore.inMemory(ticker.getIfAvailable(Ticker::system),
        wallClock.getIfAvailable(InstantSource::system),
        properties.getInMemory().getMaxKeysPerBudget(),
        scheduler.getIfAvailable(() -> MaintenanceScheduler.every(interval)));
  }

  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty("ratelimiter.quota-file")
  QuotaFileLifecycle quotaFileLifecycle(RateLimitStore store, RateLimiterProperties properties) {
    return new QuotaFileLifecycle(store, properties.getQuotaFile(),
        properties.getQuotaFileInterval());
  }

  @Bean
  @ConditionalOnMissingBean
  ModelTokenEstimator modelTokenEstimator(RateLimiterProperties properties) {
    return PropertiesTranslation.estimator(properties.getTpm());
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitPlanResolver rateLimitPlanResolver(RateLimitStore store, RateLimitPolicies policies,
      ObjectProvider<Ticker> ticker, RateLimiterProperties properties) {
    // a store that keeps no plans leaves every key on the default plan, and takes no assignment
    return store.planAssignments()
        .map(assignments -> RateLimitPlanResolver.caching(assignments, policies,
            ticker.getIfAvailable(Ticker::system), properties.getPlanRefresh(),
            properties.getPlanCacheMaxKeys()))
        .orElseGet(() -> RateLimitPlanResolver.fixed(policies.defaultPlan()));
  }

  @Bean
  @ConditionalOnMissingBean
  UpstreamRoutes upstreamRoutes(RateLimiterProperties properties, RateLimitPolicies policies,
      Environment environment) {
    UpstreamProperties.checkNames(environment);
    return PropertiesTranslation.upstreams(properties, policies);
  }

  @Bean
  @Conditional(UpstreamWaitingRoomFactory.OnUpstreams.class)
  @ConditionalOnMissingBean(UpstreamWaitingRoom.class)
  UpstreamWaitingRoomFactory upstreamWaitingRoomFactory(RateLimiterProperties properties,
      ObjectProvider<UpstreamWaitingRoom.Listener> listeners, RateLimitStore store,
      UpstreamRoutes upstreams) {
    return new UpstreamWaitingRoomFactory(UpstreamWaitingRoomFactory.maxWaiters(properties),
        listeners, store, upstreams);
  }

  @Bean
  @Conditional(UpstreamWaitingRoomFactory.OnUpstreams.class)
  @ConditionalOnMissingBean
  UpstreamWaitingRoom upstreamWaitingRoom(UpstreamWaitingRoomFactory factory) {
    return factory.room();
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitEnforcer rateLimitEnforcer(RateLimitStore store, RateLimitPolicies policies,
      RateLimiterProperties properties, ObjectProvider<RateLimitObserver> observers,
      RateLimitPlanResolver plans, ApplicationEventPublisher events, UpstreamRoutes upstreams,
      ObjectProvider<UpstreamWaitingRoom> room) {
    requireUpstreams(store, upstreams);
    UpstreamWaits waits = PropertiesTranslation.waits(properties);
    // the quota thresholds become application events: told after the application's observers
    RateLimitObserver thresholds = new QuotaThresholdPublisher(events);
    return new RateLimitEnforcer(store, policies, properties.getStoreFailure(),
        () -> java.util.stream.Stream.concat(observers.orderedStream(),
            java.util.stream.Stream.of(thresholds)).toList(), plans, upstreams,
        upstreams.isEmpty() ? null : room.getIfAvailable(), waits);
  }

  /** Fails start-up when upstreams are configured on a store that keeps none. */
  private static void requireUpstreams(RateLimitStore store, UpstreamRoutes upstreams) {
    if (upstreams.isEmpty()) {
      return;
    }
    try {
      store.upstreamStatus(upstreams.upstreams().values().iterator().next());
    } catch (UnsupportedOperationException e) {
      throw new InvalidRateLimitPropertyException("ratelimiter.upstreams",
          upstreams.upstreams().keySet(), "no upstreams: the store "
              + store.getClass().getName() + " keeps none");
    } catch (RuntimeException e) {
      // a store that cannot answer now (Redis down) keeps upstreams all the same
    }
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitProblemFactory rateLimitProblemFactory(RateLimiterWebProperties web) {
    String type = web.getProblemType();
    try {
      if (type != null) {
        return new DefaultRateLimitProblemFactory(new URI(type));
      }
    } catch (URISyntaxException e) {
      // named below
    }
    throw new InvalidRateLimitPropertyException("ratelimiter.web.problem-type", type, "a URI");
  }

  @Bean
  @ConditionalOnMissingBean
  RateLimitGateway rateLimitGateway(RateLimitEnforcer enforcer, RateLimiterProperties properties,
      RateLimiterWebProperties web, ModelTokenEstimator estimator, RateLimitProblemFactory problems,
      ObjectProvider<InstantSource> wallClock) {
    return RateLimitGateway.builder(enforcer, Json.READER)
        // a provider's retry-after may be an HTTP-date: read against the application's clock
        .providerHeaders(ProviderHeaders.withClock(wallClock.getIfAvailable(InstantSource::system)))
        .estimator(estimator)
        .bodyLimits(PropertiesTranslation.bodyLimits(web))
        .missingKey(properties.getMissingKey(), PropertiesTranslation.anonymousKey(properties))
        .problems(problems)
        .build();
  }
}
