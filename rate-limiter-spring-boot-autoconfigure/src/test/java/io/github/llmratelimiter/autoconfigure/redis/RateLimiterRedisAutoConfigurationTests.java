package io.github.llmratelimiter.autoconfigure.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterFailureAnalyzerAccess;
import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpoint;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.internal.KeyIds;
import io.github.llmratelimiter.gateway.internal.KeyMasking;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.redis.FailurePolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RedisServer;
import io.github.llmratelimiter.redis.TestRedis;
import io.lettuce.core.RedisClient;
import io.micrometer.common.KeyValue;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.observation.LettuceObservationAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * The conditions and settings of the Redis store's auto-configuration, against a real redis-server
 * (started by the test from the embedded-redis binary) configured through {@code spring.data.redis.*}.
 */
class RateLimiterRedisAutoConfigurationTests {

  private static final String API_KEY = "sk-live-secret-0123456789";

  private static RedisServer server;

  private ApplicationContextRunner runner;

  @BeforeAll
  static void startRedis() {
    server = RedisServer.start();
  }

  @AfterAll
  static void stopRedis() {
    server.close();
  }

  private ApplicationContextRunner runner() {
    if (runner == null) {
      runner = new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
              RateLimiterRedisAutoConfiguration.class, RateLimiterRedisMonitoringAutoConfiguration.class,
              RateLimiterAutoConfiguration.class))
          .withPropertyValues("spring.data.redis.host=127.0.0.1",
              "spring.data.redis.port=" + server.port(), "ratelimiter.rpm.limit=2");
    }
    return runner;
  }

  @Test
  void runWhenStoreIsUnsetShouldUseTheInMemoryStore() {
    runner().run(context -> assertThat(context)
        .hasSingleBean(RateLimitStore.class)
        .doesNotHaveBean(RedisRateLimitStore.class)
        .doesNotHaveBean("rateLimiterHealthIndicator"));
    runner().withPropertyValues("ratelimiter.store=memory").run(context -> assertThat(context)
        .doesNotHaveBean(RedisRateLimitStore.class));
  }

  @Test
  void runWhenStoreIsRedisShouldBuildTheRedisStoreFromSpringDataRedisAndHashKeys() {
    String prefix = "ctx-" + System.nanoTime();
    runner().withPropertyValues("ratelimiter.store=redis", "ratelimiter.redis.key-prefix=" + prefix)
        .run(context -> {
          assertThat(context).hasSingleBean(RateLimitStore.class).hasSingleBean(RedisRateLimitStore.class);
          RedisRateLimitStore store = context.getBean(RedisRateLimitStore.class);
          assertThat(store.failurePolicy()).isEqualTo(FailurePolicy.LOCAL_FALLBACK);
          assertThat(store.ping()).isTrue();
          RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
          RateLimitKey key = RateLimitKey.of(API_KEY, null);
          assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isTrue();
          assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isTrue();
          assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isFalse();
          List<String> keys = RedisKeysOnServer.stateKeys(server, prefix + ":{*");
          assertThat(keys).hasSize(1).allSatisfy(k -> assertThat(k)
              .contains(RedisRateLimitStore.hashedKey(API_KEY)).doesNotContain("sk-live"));
          assertThat(RedisKeysOnServer.keys(server, prefix + ":*")).hasSizeGreaterThan(1)
              .noneMatch(k -> k.contains("sk-live"));
        });
  }

  @Test
  void runWhenHashKeysIsFalseShouldKeepKeysReadable() {
    String prefix = "clear-" + System.nanoTime();
    runner().withPropertyValues("ratelimiter.store=redis", "ratelimiter.redis.key-prefix=" + prefix,
            "ratelimiter.redis.hash-keys=false", "ratelimiter.redis.failure-policy=fail-closed")
        .run(context -> {
          RedisRateLimitStore store = context.getBean(RedisRateLimitStore.class);
          assertThat(store.failurePolicy()).isEqualTo(FailurePolicy.FAIL_CLOSED);
          context.getBean(RateLimitEnforcer.class).acquire(null, RateLimitKey.of("tenant-a", null), 1);
          assertThat(RedisKeysOnServer.stateKeys(server, prefix + ":*")).containsExactlyInAnyOrder(
              prefix + ":{tenant-a}:default:tenant-a:s", prefix + ":instances");
        });
  }

  @Test
  void runWhenStoreFailureIsSetShouldGiveRedisTheSameAnswer() {
    runner().withPropertyValues("ratelimiter.store=redis").run(context -> {
      assertThat(context.getBean(RedisRateLimitStore.class).failurePolicy())
          .isEqualTo(FailurePolicy.LOCAL_FALLBACK);
    });
    runner().withPropertyValues("ratelimiter.store=redis", "ratelimiter.store-failure=deny")
        .run(context -> assertThat(context.getBean(RedisRateLimitStore.class).failurePolicy())
            .isEqualTo(FailurePolicy.FAIL_CLOSED));
    runner().withPropertyValues("ratelimiter.store=redis", "ratelimiter.store-failure=allow")
        .run(context -> assertThat(context.getBean(RedisRateLimitStore.class).failurePolicy())
            .isEqualTo(FailurePolicy.FAIL_OPEN));
  }

  @Test
  void runWhenTheDeprecatedFailurePolicyIsSetShouldKeepItsMeaning() {
    runner().withPropertyValues("ratelimiter.store=redis", "ratelimiter.store-failure=allow",
            "ratelimiter.redis.failure-policy=local-fallback")
        .run(context -> assertThat(context.getBean(RedisRateLimitStore.class).failurePolicy())
            .isEqualTo(FailurePolicy.LOCAL_FALLBACK));
  }

  @Test
  void runWhenRedisIsAClusterShouldBuildAClusterStore() {
    List<RedisServer> nodes = TestRedis.startCluster(3);
    try {
      String seeds = nodes.stream().map(n -> "127.0.0.1:" + n.port()).collect(Collectors.joining(","));
      runner().withPropertyValues("ratelimiter.store=redis", "spring.data.redis.cluster.nodes=" + seeds)
          .run(context -> {
            RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
            for (int i = 0; i < 20; i++) { // keys of many tenants, over every master
              RateLimitKey key = RateLimitKey.of("tenant-" + i, null);
              assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isTrue();
              assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isTrue();
              assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isFalse();
            }
            RedisRateLimitStore store = context.getBean(RedisRateLimitStore.class);
            assertThat(store.errorCount()).isZero();
            assertThat(admin(store).trackedKeys(enforcer.policies().policy(null).budgets(
                RateLimitKey.of("x", null)).get(0))).isEqualTo(20);
          });
    } finally {
      nodes.forEach(RedisServer::close);
    }
  }

  @Test
  void runWhenKeysAreHashedShouldShowThemHashedInTheActuatorEndpoint() {
    runner().withPropertyValues("ratelimiter.store=redis", "ratelimiter.redis.key-prefix=ep-" + System.nanoTime(),
            "ratelimiter.policies.chat.scope=api-key-and-model", "ratelimiter.policies.chat.rpm.limit=5")
        .run(context -> {
          RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
          enforcer.acquire(null, RateLimitKey.of(API_KEY, null), 1);
          enforcer.acquire("chat", RateLimitKey.of(API_KEY, "gpt-4o"), 1);
          RateLimiterEndpoint endpoint = new RateLimiterEndpoint(
              enforcer.store(), enforcer.policies(), KeyIds.random(), 20, 1000);
          RateLimiterEndpoint.Report report = endpoint.report(null);
          List<RateLimiterEndpoint.KeyState> top = report.budgets().stream()
              .flatMap(b -> b.top().stream()).toList();
          assertThat(top).hasSize(2).allSatisfy(k -> {
            assertThat(k.key()).startsWith("#").hasSize(23);
            assertThat(k.id()).isNull();
          });
          assertThat(top).extracting(RateLimiterEndpoint.KeyState::key)
              .contains(RedisRateLimitStore.hashedKey(API_KEY));
          assertThat(report.toString()).doesNotContain(API_KEY).doesNotContain("sk-live");
          // looked up by the API key in clear, it is found and shown masked
          RateLimiterEndpoint.KeyReport one = endpoint.key(API_KEY, "gpt-4o");
          assertThat(one).isNotNull();
          assertThat(one.key()).isEqualTo(KeyMasking.mask(API_KEY));
          assertThat(one.budgets()).hasSize(2);
          assertThat(one.toString()).doesNotContain(API_KEY);
          assertThat(endpoint.reset(API_KEY, "gpt-4o").reset()).isEqualTo(2);
          assertThat(endpoint.key(API_KEY, "gpt-4o")).isNull();
        });
  }

  @Test
  void runWhenTheApplicationDefinesAStoreShouldUseIt() {
    RateLimitStore mine = RateLimitStore.inMemory();
    runner().withPropertyValues("ratelimiter.store=redis")
        .withBean(RateLimitStore.class, () -> mine)
        .run(context -> {
          assertThat(context).hasSingleBean(RateLimitStore.class).doesNotHaveBean(RedisRateLimitStore.class);
          assertThat(context.getBean(RateLimitStore.class)).isSameAs(mine);
        });
  }

  @Test
  void runWhenRedisClassesAreMissingShouldFailNamingTheStoreProperty() {
    runner().withPropertyValues("ratelimiter.store=redis")
        .withClassLoader(new FilteredClassLoader(RedisRateLimitStore.class))
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
              .contains("'ratelimiter.store'").contains("'redis'").contains("rate-limiter-redis")
              .contains("spring-boot-starter-data-redis");
        });
    runner().withClassLoader(new FilteredClassLoader(RedisClient.class)).run(context ->
        assertThat(context).hasNotFailed().doesNotHaveBean(RedisRateLimitStore.class));
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', quoteCharacter = '"', value = {
      "ratelimiter.store=disk | 'ratelimiter.store' has the value 'disk', but it must be one of memory, redis",
      "ratelimiter.redis.command-timeout=0ms | 'ratelimiter.redis.command-timeout' has the value 'PT0S'",
      "ratelimiter.redis.command-timeout=soon | 'ratelimiter.redis.command-timeout' has the value 'soon'",
      "ratelimiter.redis.retry-interval=-1s | 'ratelimiter.redis.retry-interval' has the value 'PT-1S'",
      "ratelimiter.redis.slot-lease=0s | 'ratelimiter.redis.slot-lease' has the value 'PT0S'",
      "ratelimiter.redis.slot-lease=2d | 'ratelimiter.redis.slot-lease' has the value 'PT48H', but it"
          + " must be a positive duration of at most 24h",
      "ratelimiter.redis.key-prefix=a b | 'ratelimiter.redis.key-prefix' has the value 'a b'",
      "ratelimiter.redis.failure-policy=sometimes | 'ratelimiter.redis.failure-policy' has the value"
          + " 'sometimes', but it must be one of fail-open, fail-closed, local-fallback",
      "spring.data.redis.masterreplica.nodes=127.0.0.1:1,127.0.0.1:2"
          + " | 'spring.data.redis.masterreplica.nodes' has the value"
          + " '127.0.0.1:1,127.0.0.1:2', but it must be unset while ratelimiter.store=redis"})
  void runWhenASettingIsInvalidShouldFailNamingTheProperty(String properties, String message) {
    runner().withPropertyValues("ratelimiter.store=redis")
        .withPropertyValues(properties.split(";"))
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
              .contains(message);
        });
  }

  @Test
  void runWhenActuatorAndMicrometerArePresentShouldAddHealthAndMeters() {
    runner().withPropertyValues("ratelimiter.store=redis")
        .withConfiguration(AutoConfigurations.of(MetricsAutoConfiguration.class,
            CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class))
        .run(context -> {
          Health health = context.getBean("rateLimiterHealthIndicator", HealthIndicator.class).health();
          assertThat(health.getStatus()).isEqualTo(Status.UP);
          assertThat(health.getDetails()).containsEntry("store", "redis")
              .containsEntry("failurePolicy", "local-fallback").containsEntry("degraded", false)
              .containsEntry("errors", 0L).hasSize(4);
          MeterRegistry registry = context.getBean(MeterRegistry.class);
          assertThat(registry.get("ratelimiter.store.errors").tag("store", "redis").functionCounter()
              .count()).isZero();
          assertThat(registry.get("ratelimiter.store.degraded").gauge().value()).isZero();
          assertThat(registry.get("ratelimiter.store.degraded").gauge().getId().getTags())
              .extracting(t -> t.getKey() + "=" + t.getValue()).containsExactly("store=redis");
        });
  }

  /** Records the Redis command of every Lettuce observation that starts. */
  private static final class ObservedCommands implements ObservationHandler<Observation.Context> {

    final List<String> commands = new CopyOnWriteArrayList<>();

    @Override
    public void onStart(Observation.Context context) {
      KeyValue operation = context.getLowCardinalityKeyValue("db.operation");
      commands.add(operation == null ? context.getName() : operation.getValue());
    }

    @Override
    public boolean supportsContext(Observation.Context context) {
      return true;
    }
  }

  @ParameterizedTest
  @CsvSource({"false", "true"})
  void runWhenLettuceIsObservedShouldObserveTheStoresCommandsOnlyWhenTraceCommandsIsOn(
      boolean trace) {
    ObservedCommands observed = new ObservedCommands();
    ObservationRegistry registry = ObservationRegistry.create();
    registry.observationConfig().observationHandler(observed);
    runner().withPropertyValues("ratelimiter.store=redis",
            "ratelimiter.redis.trace-commands=" + trace)
        .withConfiguration(AutoConfigurations.of(LettuceObservationAutoConfiguration.class))
        .withBean(ObservationRegistry.class, () -> registry)
        .run(context -> {
          context.getBean(RateLimitEnforcer.class).acquire(null, RateLimitKey.of(API_KEY, null), 1);
          context.getBean(StringRedisTemplate.class).opsForValue().set("app-" + trace, "v");
          assertThat(observed.commands).as("the application's own commands").contains("SET");
          if (trace) {
            assertThat(observed.commands).contains("EVALSHA");
          } else {
            assertThat(observed.commands).doesNotContain("EVALSHA", "EVAL", "SCRIPT");
          }
        });
  }

  @Test
  void runWhenHealthOrMetricsAreOffShouldSkipThem() {
    runner().withPropertyValues("ratelimiter.store=redis", "management.health.ratelimiter.enabled=false",
            "ratelimiter.metrics.enabled=false")
        .run(context -> assertThat(context).hasSingleBean(RedisRateLimitStore.class)
            .doesNotHaveBean("rateLimiterHealthIndicator").doesNotHaveBean("rateLimitStoreMetrics"));
    runner().withPropertyValues("ratelimiter.store=redis")
        .withClassLoader(new FilteredClassLoader(HealthIndicator.class, MeterRegistry.class))
        .run(context -> assertThat(context).hasSingleBean(RedisRateLimitStore.class)
            .doesNotHaveBean("rateLimiterHealthIndicator").doesNotHaveBean("rateLimitStoreMetrics"));
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
