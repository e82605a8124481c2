package io.github.llmratelimiter.autoconfigure.cloudgateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import io.github.llmratelimiter.gateway.MissingApiKeyException;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.cloud.gateway.event.FilterArgsEvent;
import org.springframework.cloud.gateway.filter.ratelimit.KeyResolver;
import org.springframework.cloud.gateway.filter.ratelimit.RateLimiter;
import org.springframework.cloud.gateway.filter.ratelimit.AbstractRateLimiter;
import org.springframework.cloud.gateway.support.ConfigurationService;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.convert.support.DefaultConversionService;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * The auto-configuration of the limiter as Spring Cloud Gateway's {@code RateLimiter}: when it is
 * the default and when it is reached by name only, when it backs off, and the limiter and key
 * resolver it defines, called directly (the in-memory store answers at once).
 */
class SpringCloudGatewayRateLimiterAutoConfigurationTests {

  private final ReactiveWebApplicationContextRunner reactive = new ReactiveWebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(
          RateLimiterAutoConfiguration.class, SpringCloudGatewayRateLimiterAutoConfiguration.class))
      .withBean(ConfigurationService.class, () -> new ConfigurationService(new DefaultListableBeanFactory(),
          DefaultConversionService::getSharedInstance, () -> null))
      .withPropertyValues("ratelimiter.rpm.limit=2", "ratelimiter.policies.chat.rpm.limit=1");

  /** Another rate limiter and key resolver, both default candidates, as an application may have. */
  @Configuration(proxyBeanMethods = false)
  static class OtherBeans {

    @Bean
    AllowAll otherRateLimiter() {
      return new AllowAll();
    }

    @Bean
    KeyResolver otherKeyResolver() {
      return exchange -> Mono.just("other");
    }
  }

  /** A rate limiter that allows every call. */
  static final class AllowAll extends AbstractRateLimiter<Object> {

    AllowAll() {
      super(Object.class, "allow-all", null);
    }

    @Override
    public Mono<Response> isAllowed(String routeId, String id) {
      return Mono.just(new Response(true, Map.of()));
    }
  }

  @Test
  void runWhenNoOtherRateLimiterShouldMakeTheLlmRateLimiterTheDefault() {
    reactive.run(context -> {
      assertThat(context).hasNotFailed();
      assertThat(context.getBean(RateLimiter.class)).isSameAs(context.getBean("llmRateLimiter"));
      assertThat(context.getBean("llmApiKeyResolver")).isInstanceOf(ApiKeyResolver.class);
    });
  }

  @Test
  void runWhenAnotherRateLimiterExistsShouldOfferTheLlmBeansByNameOnly() {
    reactive.withUserConfiguration(OtherBeans.class).run(context -> {
      assertThat(context).hasNotFailed();
      // one default RateLimiter and KeyResolver: the RequestRateLimiter filter is not ambiguous
      assertThat(context.getBean(RateLimiter.class)).isInstanceOf(AllowAll.class);
      assertThat(context.getBean(KeyResolver.class)).isSameAs(context.getBean("otherKeyResolver"));
      assertThat(context.getBean("llmRateLimiter")).isInstanceOf(LlmRateLimiter.class);
      assertThat(context.getBean("llmApiKeyResolver")).isInstanceOf(ApiKeyResolver.class);
    });
  }

  @Test
  void runWhenTheApplicationDefinesTheBeansShouldBackOff() {
    reactive.withBean("llmRateLimiter", AllowAll.class, AllowAll::new)
        .withBean("llmApiKeyResolver", KeyResolver.class, () -> exchange -> Mono.just("mine"))
        .run(context -> {
          assertThat(context).hasNotFailed().doesNotHaveBean(LlmRateLimiter.class);
          assertThat(context.getBean("llmRateLimiter")).isInstanceOf(AllowAll.class);
          assertThat(context.getBean("llmApiKeyResolver")).isNotInstanceOf(ApiKeyResolver.class);
        });
  }

  @Test
  void runWhenNotAReactiveWebApplicationShouldSkipIt() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(
            RateLimiterAutoConfiguration.class, SpringCloudGatewayRateLimiterAutoConfiguration.class))
        .run(context -> assertThat(context).hasNotFailed()
            .doesNotHaveBean(LlmRateLimiter.class).doesNotHaveBean("llmApiKeyResolver"));
  }

  @Test
  void runWhenSpringCloudGatewayIsMissingShouldSkipIt() {
    reactive.withClassLoader(new FilteredClassLoader(RateLimiter.class))
        .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean("llmRateLimiter"));
  }

  @Test
  void runWhenTheGatewayIsDisabledOrTheLimiterIsShouldSkipIt() {
    reactive.withPropertyValues("spring.cloud.gateway.server.webflux.enabled=false")
        .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean("llmRateLimiter"));
    reactive.withPropertyValues("ratelimiter.enabled=false")
        .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean("llmRateLimiter"));
  }

  @Test
  void runWhenARouteHasNoArgumentsShouldChargeTheDefaultPolicyAndAnswerWithTheHeaders() {
    reactive.run(context -> {
      LlmRateLimiter limiter = context.getBean(LlmRateLimiter.class);
      String key = "sk-direct-default-000001";
      for (int i = 1; i >= 0; i--) {
        RateLimiter.Response ok = limiter.isAllowed("route", key).block();
        assertThat(ok.isAllowed()).isTrue();
        assertThat(ok.getHeaders()).containsEntry("x-ratelimit-remaining-requests", Integer.toString(i))
            .containsEntry("RateLimit-Policy", "\"default\";q=2;w=60")
            .doesNotContainKey("Retry-After");
      }
      RateLimiter.Response denied = limiter.isAllowed("route", key).block();
      assertThat(denied.isAllowed()).isFalse();
      assertThat(denied.getHeaders()).containsEntry("x-ratelimit-remaining-requests", "0")
          .containsKeys("Retry-After", "retry-after-ms", "RateLimit")
          .doesNotContainValue(key);
      // another route of the same key without arguments shares the default policy's budget
      assertThat(limiter.isAllowed("other-route", key).block().isAllowed()).isFalse();
    });
  }

  @Test
  void runWhenARouteNamesAPolicyAndModelShouldChargeThem() {
    reactive.withPropertyValues("ratelimiter.policies.chat.scope=api-key-and-model").run(context -> {
      LlmRateLimiter limiter = context.getBean(LlmRateLimiter.class);
      limiter.onApplicationEvent(new FilterArgsEvent(this, "chat-route",
          Map.of("llm-rate-limiter.policy", "chat", "llm-rate-limiter.model", "gpt-4o")));
      limiter.onApplicationEvent(new FilterArgsEvent(this, "other-model",
          Map.of("llm-rate-limiter.policy", "chat", "llm-rate-limiter.model", "gpt-4o-mini")));
      String key = "sk-direct-chat-00000001";
      RateLimiter.Response ok = limiter.isAllowed("chat-route", key).block();
      assertThat(ok.isAllowed()).isTrue();
      assertThat(ok.getHeaders()).containsEntry("RateLimit-Policy", "\"chat\";q=1;w=60");
      assertThat(limiter.isAllowed("chat-route", key).block().isAllowed()).isFalse();
      // one budget per key and model: the other model's route still has its own
      assertThat(limiter.isAllowed("other-model", key).block().isAllowed()).isTrue();
      // the default policy's budget was not touched
      assertThat(limiter.isAllowed("no-arguments", key).block().getHeaders())
          .containsEntry("x-ratelimit-remaining-requests", "1");
    });
  }

  @Test
  void runWhenARouteArgumentIsInvalidShouldRejectItNamingIt() {
    reactive.run(context -> {
      LlmRateLimiter limiter = context.getBean(LlmRateLimiter.class);
      assertThatThrownBy(() -> limiter.onApplicationEvent(new FilterArgsEvent(this, "r1",
          Map.of("llm-rate-limiter.policy", "nope"))))
          .isInstanceOfSatisfying(InvalidRateLimitPropertyException.class, e -> assertThat(e.property())
              .isEqualTo("spring.cloud.gateway.server.webflux.routes[id=r1].filters[RequestRateLimiter]"
                  + ".args.llm-rate-limiter.policy"))
          .hasMessageContaining("'nope'").hasMessageContaining("[default, chat]");
      assertThatThrownBy(() -> limiter.onApplicationEvent(new FilterArgsEvent(this, "r2",
          Map.of("llm-rate-limiter.polcy", "chat"))))
          .isInstanceOfSatisfying(InvalidRateLimitPropertyException.class, e -> assertThat(e.property())
              .endsWith(".args.llm-rate-limiter.polcy"));
      for (String cost : new String[] {"0", "-1", "Infinity", "NaN"}) {
        assertThatThrownBy(() -> limiter.onApplicationEvent(new FilterArgsEvent(this, "r3",
            Map.of("llm-rate-limiter.cost", cost))))
            .as(cost).isInstanceOfSatisfying(InvalidRateLimitPropertyException.class,
                e -> assertThat(e.property()).endsWith(".args.llm-rate-limiter.cost"));
      }
      // nothing invalid was kept: the routes are charged with the defaults
      assertThat(limiter.config("r1").getPolicy()).isNull();
      assertThat(limiter.config("r3").getCost()).isEqualTo(1);
      // another limiter's arguments are not this one's business
      limiter.onApplicationEvent(new FilterArgsEvent(this, "r4", Map.of("redis-rate-limiter.x", "1")));
      assertThat(limiter.getConfig()).doesNotContainKey("r4");
    });
  }

  @Test
  void runWhenTheKeyResolverReadsTheHeadersShouldResolveAsTheWebAdaptersDo() {
    reactive.run(context -> {
      KeyResolver resolver = context.getBean("llmApiKeyResolver", KeyResolver.class);
      assertThat(resolver.resolve(exchange("Authorization", "Bearer sk-bearer-1")).block())
          .isEqualTo("sk-bearer-1");
      assertThat(resolver.resolve(exchange("X-API-Key", "sk-header-1")).block()).isEqualTo("sk-header-1");
      // no key: nothing, so the filter answers with its empty-key status
      assertThat(resolver.resolve(exchange("Authorization", "Basic dXNlcjpwYXNz")).blockOptional())
          .isEmpty();
      // two different keys: an error signal, charged to neither
      MockServerWebExchange two = MockServerWebExchange.from(MockServerHttpRequest.get("/v1/x")
          .header("Authorization", "Bearer sk-one").header("X-API-Key", "sk-two"));
      assertThatThrownBy(() -> resolver.resolve(two).block())
          .hasMessageContaining("more than one API key").hasMessageNotContaining("sk-one");
    });
    reactive.withPropertyValues("ratelimiter.missing-key=anonymous").run(context ->
        assertThat(context.getBean("llmApiKeyResolver", KeyResolver.class)
            .resolve(exchange("X-Other", "x")).block()).isEqualTo("anonymous"));
  }

  @Test
  void runWhenTheIdIsBlankShouldSignalAMissingKey() {
    reactive.run(context -> assertThatThrownBy(
        () -> context.getBean(LlmRateLimiter.class).isAllowed("route", " ").block())
        .isInstanceOf(MissingApiKeyException.class));
  }

  private static MockServerWebExchange exchange(String header, String value) {
    return MockServerWebExchange.from(MockServerHttpRequest.get("/v1/x").header(header, value));
  }
}
