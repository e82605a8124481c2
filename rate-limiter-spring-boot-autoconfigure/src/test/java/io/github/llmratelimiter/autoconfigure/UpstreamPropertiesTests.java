package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code ratelimiter.upstreams} from the properties: the upstreams and their routes reach the
 * enforcer; invalid values stop start-up naming the property.
 */
class UpstreamPropertiesTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class));

  @Test
  void runWhenUpstreamsAreConfiguredShouldRouteCallsByModelThenPolicy() {
    runner.withPropertyValues(
            "ratelimiter.policies.chat.rpm.limit=100",
            "ratelimiter.policies.batch.rpm.limit=100",
            "ratelimiter.upstreams.openai-main.rpm=500",
            "ratelimiter.upstreams.openai-main.tpm=200000",
            "ratelimiter.upstreams.openai-main.concurrency=50",
            "ratelimiter.upstreams.openai-main.lease-timeout=2m",
            "ratelimiter.upstreams.openai-main.models=gpt-4o*,o1",
            "ratelimiter.upstreams.openai-main.policies=chat",
            "ratelimiter.upstreams.azure.tpm=1000",
            "ratelimiter.upstreams.azure.margin=0",
            "ratelimiter.upstreams.azure.policies=batch")
        .run(context -> {
          assertThat(context).hasNotFailed();
          UpstreamRoutes routes = context.getBean(UpstreamRoutes.class);
          // a call counts a minute and the margin (1s unless set): the provider counts at arrival
          Duration minuteAndMargin = Duration.ofSeconds(61);
          Upstream openai = new Upstream("openai-main", new WindowLimit(500, minuteAndMargin),
              new ModelTokenLimit(200_000, minuteAndMargin),
              new ConcurrencyLimit(50, Duration.ofMinutes(2)));
          Upstream azure = new Upstream("azure", null, ModelTokenLimit.perMinute(1000), null);
          assertThat(routes.upstreams()).containsEntry("openai-main", openai)
              .containsEntry("azure", azure);
          assertThat(routes.route("batch", "gpt-4o-mini")).isEqualTo(openai);
          assertThat(routes.route("batch", "claude")).isEqualTo(azure);
          assertThat(routes.route("chat", null)).isEqualTo(openai);
          assertThat(routes.route("default", "claude")).isNull();
          assertThat(context.getBean(RateLimitEnforcer.class).upstreamRoutes()).isSameAs(routes);
        });
  }

  @Test
  void runWhenNoUpstreamIsConfiguredShouldRouteNothing() {
    runner.run(context -> {
      assertThat(context).hasNotFailed();
      assertThat(context.getBean(RateLimitEnforcer.class).upstreamRoutes().isEmpty()).isTrue();
    });
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      // an upstream with no limit
      "ratelimiter.upstreams.u.rpm|ratelimiter.upstreams.u.models=gpt-4o",
      "ratelimiter.upstreams.u.rpm|ratelimiter.upstreams.u.rpm=0",
      "ratelimiter.upstreams.u.tpm|ratelimiter.upstreams.u.tpm=-5",
      "ratelimiter.upstreams.u.concurrency|ratelimiter.upstreams.u.concurrency=0",
      "ratelimiter.upstreams.u.lease-timeout|ratelimiter.upstreams.u.lease-timeout=0s",
      "ratelimiter.upstreams.u.lease-timeout|ratelimiter.upstreams.u.lease-timeout=2d",
      "ratelimiter.upstreams.u.margin|ratelimiter.upstreams.u.margin=-1ms",
      "ratelimiter.upstreams.u.margin|ratelimiter.upstreams.u.margin=1m",
      "ratelimiter.upstreams.u.policies[0]|ratelimiter.upstreams.u.policies=nope",
      "ratelimiter.upstreams.u.models[1]|ratelimiter.upstreams.u.models[1]= ",
  })
  void runWhenAnUpstreamValueIsInvalidShouldFailNamingTheProperty(String property, String setting) {
    String[] base = {"ratelimiter.upstreams.u.rpm=10", "ratelimiter.upstreams.u.models[0]=gpt-4o"};
    if (property.endsWith(".rpm") && setting.endsWith("models=gpt-4o")) {
      base = new String[] {"ratelimiter.upstreams.u.lease-timeout=1m"};
    }
    failsNaming(property, base, setting);
  }

  @Test
  void runWhenAModelGlobIsInTwoUpstreamsShouldFailNamingTheSecond() {
    failsNaming("ratelimiter.upstreams.b.models[1]", new String[0],
        "ratelimiter.upstreams.a.rpm=10", "ratelimiter.upstreams.a.models=gpt-4o*",
        "ratelimiter.upstreams.b.rpm=10", "ratelimiter.upstreams.b.models=o1,gpt-4o*");
  }

  @Test
  void runWhenAPolicyIsInTwoUpstreamsShouldFailNamingTheSecond() {
    failsNaming("ratelimiter.upstreams.b.policies[0]", new String[0],
        "ratelimiter.policies.chat.rpm.limit=5",
        "ratelimiter.upstreams.a.rpm=10", "ratelimiter.upstreams.a.policies=chat",
        "ratelimiter.upstreams.b.rpm=10", "ratelimiter.upstreams.b.policies=chat");
  }

  @Test
  void runWhenAnUpstreamHasNoRouteShouldFailNamingItsModels() {
    failsNaming("ratelimiter.upstreams.lonely.models", new String[0],
        "ratelimiter.upstreams.lonely.rpm=10");
  }

  @Test
  void runWhenAnUpstreamNameHoldsABraceShouldFailNamingTheUpstreams() {
    failsNaming("ratelimiter.upstreams", new String[0],
        "ratelimiter.upstreams[a{b}].rpm=10", "ratelimiter.upstreams[a{b}].models=m");
  }

  @Test
  void runWhenAnUpstreamNameHoldsADotShouldFailNamingTheProperty() {
    failsNaming("ratelimiter.upstreams.openai.main.rpm", new String[0],
        "ratelimiter.upstreams.openai.main.rpm=5", "ratelimiter.upstreams.openai.main.models=m");
    failsNaming("ratelimiter.upstreams", new String[0],
        "ratelimiter.upstreams[openai.main].rpm=5", "ratelimiter.upstreams[openai.main].models=m");
  }

  @Test
  void runWhenAnUpstreamSettingIsMisspeltShouldFailNamingIt() {
    failsNaming("ratelimiter.upstreams.u.rmp", new String[0], "ratelimiter.upstreams.u.rpm=5",
        "ratelimiter.upstreams.u.rmp=5", "ratelimiter.upstreams.u.models=m");
  }

  @Test
  void runWhenEverySettingIsSpelledInAnyRelaxedFormShouldStart() {
    runner.withPropertyValues("ratelimiter.upstreams.u.rpm=5", "ratelimiter.upstreams.u.tpm=500",
            "ratelimiter.upstreams.u.concurrency=2", "ratelimiter.upstreams.u.leaseTimeout=1m",
            "ratelimiter.upstreams.u.MARGIN=250ms",
            "ratelimiter.upstreams.u.models[0]=m", "ratelimiter.upstreams.v.LEASE-TIMEOUT=1m",
            "ratelimiter.upstreams.v.rpm=5", "ratelimiter.upstreams.v.policies=default")
        .run(context -> assertThat(context).hasNotFailed());
  }

  @Test
  void runWhenTheStoreKeepsNoUpstreamsShouldFailNamingTheUpstreams() {
    runner.withUserConfiguration(PlainStore.class)
        .withPropertyValues("ratelimiter.upstreams.u.rpm=10", "ratelimiter.upstreams.u.models=m")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
              .contains("'ratelimiter.upstreams'").contains("keeps none");
        });
  }

  /** A store that keeps no upstreams: every method but the upstreams' goes to the in-memory one. */
  @Configuration(proxyBeanMethods = false)
  static class PlainStore {
    @Bean
    RateLimitStore rateLimitStore() {
      RateLimitStore memory = RateLimitStore.inMemory();
      return (RateLimitStore) java.lang.reflect.Proxy.newProxyInstance(
          RateLimitStore.class.getClassLoader(), new Class<?>[] {RateLimitStore.class},
          (proxy, method, args) -> {
            if (method.getName().equals("upstreamStatus")) {
              throw new UnsupportedOperationException("keeps no upstreams");
            }
            try {
              return method.invoke(memory, args);
            } catch (java.lang.reflect.InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }
  }

  private void failsNaming(String property, String[] base, String... properties) {
    runner.withPropertyValues(base).withPropertyValues(properties).run(context -> {
      assertThat(context).hasFailed();
      assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
          .contains("'" + property + "'");
    });
  }
}
