package io.github.llmratelimiter.autoconfigure.aspect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterFailureAnalyzerAccess;
import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.autoconfigure.internal.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.internal.ReactiveRateLimitRequestSupport;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimited;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.aspectj.weaver.Advice;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.aop.framework.autoproxy.InfrastructureAdvisorAutoProxyCreator;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.expression.ParseException;
import org.springframework.stereotype.Service;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The aspect outside HTTP: SpEL key and cost, the exception carrying the decision, start-up checks. */
class RateLimitedAspectTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class,
          RateLimiterAutoConfiguration.class, RateLimiterAspectAutoConfiguration.class))
      .withBean(ManualTicker.class)
      .withBean(TestGateway.Tokens.class)
      .withPropertyValues("ratelimiter.policies.annotated.rpm.limit=100",
          "ratelimiter.policies.annotated.burst.capacity=10",
          "ratelimiter.policies.annotated.burst.refill-per-second=2",
          "ratelimiter.policies.reactive.burst.capacity=3",
          "ratelimiter.policies.reactive.burst.refill-per-second=0");

  @Test
  void runWhenCalledOutsideHttpShouldChargeTheSpelKeyAndCostAndThrowOnDeny() {
    runner.run(context -> {
      TestGateway.Tokens tokens = context.getBean(TestGateway.Tokens.class);
      assertThat(tokens.spend("acme", 6)).isEqualTo("acme spent 6.0");
      assertThat(tokens.spend("other", 10)).isEqualTo("other spent 10.0");
      assertThatThrownBy(() -> tokens.spend("acme", 5))
          .isInstanceOfSatisfying(RateLimitExceededException.class, e -> {
            assertThat(e.decision().reason()).isEqualTo(Reason.BURST_LIMIT);
            assertThat(e.decision().retryAfterMs()).isEqualTo(500);
            assertThat(e.outcome().policy().name()).isEqualTo("annotated");
            assertThat(e.getMessage()).doesNotContain("acme");
          });
      context.getBean(ManualTicker.class).advance(Duration.ofMillis(500));
      assertThat(tokens.spend("acme", 5)).isEqualTo("acme spent 5.0");
    });
  }

  @Test
  void runWhenAspectJIsMissingShouldStillEnforceTheAnnotation() {
    runner.withClassLoader(new FilteredClassLoader(Advice.class)).run(context -> {
      assertThat(context.getBean(AopConfigUtils.AUTO_PROXY_CREATOR_BEAN_NAME))
          .isInstanceOf(InfrastructureAdvisorAutoProxyCreator.class); // Spring's, not AspectJ's
      TestGateway.Tokens tokens = context.getBean(TestGateway.Tokens.class);
      assertThat(tokens.spend("acme", 6)).isEqualTo("acme spent 6.0");
      assertThatThrownBy(() -> tokens.spend("acme", 5)).isInstanceOf(RateLimitExceededException.class);
    });
  }

  @Test
  void runWhenAMethodReturnsAMonoShouldChargeEachSubscriptionOnceAndNoneWithout() {
    runner.withBean(Reactive.class).run(context -> {
      Reactive bean = context.getBean(Reactive.class);
      Mono<String> call = bean.call("tenant-a");
      Flux<String> stream = bean.stream("tenant-a");
      // nothing is charged until what the methods returned is subscribed to
      assertThat(bean.invocations()).isEqualTo(2);
      assertThat(call.block()).isEqualTo("called");
      assertThat(call.block()).isEqualTo("called");
      assertThat(stream.collectList().block()).containsExactly("a", "b");
      // the burst holds 3 (cost 1 each); the fourth subscription is denied with an error signal
      assertThatThrownBy(call::block).isInstanceOfSatisfying(RateLimitExceededException.class,
          e -> assertThat(e.decision().reason()).isEqualTo(Reason.BURST_LIMIT));
      assertThat(bean.subscribed()).isEqualTo(3); // the denied subscription ran nothing
      assertThat(bean.call("tenant-b").block()).isEqualTo("called");
    });
  }

  @Test
  void runWhenAnnotationNeedsARequestOutsideHttpShouldExplain() {
    runner.withBean(NoKey.class).run(context -> assertThatThrownBy(() -> context.getBean(NoKey.class).call())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("outside an HTTP request").hasMessageContaining("key ="));
  }

  @Test
  void runWhenClassIsAnnotatedShouldLimitEveryPublicMethod() {
    runner.withBean(ClassLevel.class).withPropertyValues("ratelimiter.rpm.limit=2").run(context -> {
      ClassLevel bean = context.getBean(ClassLevel.class);
      bean.a();
      bean.b();
      assertThatThrownBy(bean::a).isInstanceOf(RateLimitExceededException.class);
    });
  }

  @Test
  void runWhenAnnotationNamesUnknownPolicyShouldFailStartUp() {
    runner.withBean(UnknownPolicy.class).run(context -> {
      assertThat(context).hasFailed();
      assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
          .contains("'ratelimiter.policies'").contains("'gold'").contains("UnknownPolicy.call()");
    });
  }

  @ParameterizedTest
  @ValueSource(classes = {BadKey.class, BadModel.class, BadCost.class, BadClassLevel.class})
  void runWhenAnAnnotationsExpressionIsNotSpelShouldFailStartUpNamingTheMethod(Class<?> bean) {
    runner.withBean(bean).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause().isInstanceOf(ParseException.class);
      Throwable named = context.getStartupFailure();
      while (!(named instanceof IllegalStateException) || !named.getMessage().startsWith("@RateLimited")) {
        named = named.getCause();
      }
      assertThat(named.getMessage()).startsWith("@RateLimited on " + bean.getName() + ".call()")
          .contains("is not valid SpEL");
    });
  }

  @Test
  void runWhenAKeyExpressionGivesNothingOutsideHttpShouldFollowMissingKey() {
    runner.withBean(Tenanted.class).run(context -> {
      Tenanted bean = context.getBean(Tenanted.class);
      assertThat(bean.call("acme")).isEqualTo("acme");
      for (String none : new String[] {null, "", "  "}) {
        assertThatThrownBy(() -> bean.call(none)).isInstanceOf(InvalidRateLimitRequestException.class)
            .hasMessage("The request does not carry what this endpoint's rate limit is counted by.");
      }
    });
    runner.withBean(Tenanted.class).withPropertyValues("ratelimiter.missing-key=anonymous",
        "ratelimiter.policies.annotated.rpm.limit=2").run(context -> {
          Tenanted bean = context.getBean(Tenanted.class);
          assertThat(bean.call(null)).isNull();
          assertThat(bean.call(" ")).isEqualTo(" ");
          // both shared the anonymous key's budget of 2
          assertThatThrownBy(() -> bean.call("")).isInstanceOf(RateLimitExceededException.class);
          assertThat(bean.call("acme")).isEqualTo("acme");
        });
  }

  @Test
  void runWhenUserDefinesAspectShouldBackOff() {
    runner.withUserConfiguration(UserAspect.class).run(context -> {
      assertThat(context).hasSingleBean(RateLimitedAspect.class);
      assertThat(context.getBeanNamesForType(RateLimitedAspect.class)).containsExactly("myAspect");
    });
  }

  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  static class UserAspect {
    @org.springframework.context.annotation.Bean
    RateLimitedAspect myAspect(io.github.llmratelimiter.gateway.RateLimitGateway gateway,
        org.springframework.beans.factory.ObjectProvider<RateLimitRequestSupport> r,
        org.springframework.beans.factory.ObjectProvider<ReactiveRateLimitRequestSupport> rr,
        org.springframework.beans.factory.BeanFactory bf) {
      return new RateLimitedAspect(gateway, r, rr, bf);
    }
  }

  /** Methods that return a Mono and a Flux, counting invocations and subscriptions. */
  @Service
  static class Reactive {

    private final AtomicInteger invocations = new AtomicInteger();
    private final AtomicInteger subscribed = new AtomicInteger();

    /** Read through the proxy: a method, not a field. */
    public int invocations() {
      return invocations.get();
    }

    public int subscribed() {
      return subscribed.get();
    }

    @RateLimited(policy = "reactive", key = "#tenant")
    public Mono<String> call(String tenant) {
      invocations.incrementAndGet();
      return Mono.fromSupplier(() -> {
        subscribed.incrementAndGet();
        return "called";
      });
    }

    @RateLimited(policy = "reactive", key = "#tenant")
    public Flux<String> stream(String tenant) {
      invocations.incrementAndGet();
      return Flux.just("a", "b").doOnSubscribe(s -> subscribed.incrementAndGet());
    }
  }

  /** Calls that hold a slot of a limit on calls in flight while they run. */
  @Service
  static class InFlight {

    @RateLimited(policy = "slots", key = "#tenant")
    public String call(String tenant, Runnable whileRunning) {
      whileRunning.run();
      return "done";
    }

    @RateLimited(policy = "slots", key = "#tenant")
    public String fail(String tenant) {
      throw new IllegalStateException("upstream failed");
    }

    @RateLimited(policy = "slots", key = "#tenant")
    public Mono<String> reactive(String tenant, Mono<String> body) {
      return body;
    }
  }

  @Test
  void runWhenAPolicyLimitsCallsInFlightShouldHoldASlotUntilTheMethodEndsOutsideHttp() {
    runner.withPropertyValues("ratelimiter.policies.slots.concurrency.limit=1")
        .withBean(InFlight.class).run(context -> {
          InFlight bean = context.getBean(InFlight.class);
          // inside the call its slot is held: a nested call of the same key is refused
          assertThat(bean.call("t", () -> assertThatThrownBy(() -> bean.call("t", () -> { }))
              .isInstanceOfSatisfying(RateLimitExceededException.class, e ->
                  assertThat(e.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT))))
              .isEqualTo("done");
          // it was given back when the method returned, and when one threw
          assertThat(bean.call("t", () -> { })).isEqualTo("done");
          assertThatThrownBy(() -> bean.fail("t")).isInstanceOf(IllegalStateException.class);
          assertThat(bean.call("t", () -> { })).isEqualTo("done");
          // a Mono holds it until it terminates: an error, a cancel and a value each give it back
          assertThatThrownBy(() -> bean.reactive("t", Mono.error(new IllegalStateException("x"))).block())
              .hasMessageContaining("x");
          assertThat(bean.reactive("t", Mono.just("v")).block()).isEqualTo("v");
          bean.reactive("t", Mono.never()).subscribe().dispose();
          assertThat(bean.call("t", () -> { })).isEqualTo("done");
        });
  }

  @Service
  static class NoKey {
    @RateLimited
    public String call() {
      return "ok";
    }
  }

  @Service
  @RateLimited(key = "'batch'")
  static class ClassLevel {
    public void a() {}

    public void b() {}
  }

  @Service
  static class Tenanted {
    @RateLimited(policy = "annotated", key = "#tenant")
    public String call(String tenant) {
      return tenant;
    }
  }

  @Service
  static class BadKey {
    @RateLimited(key = "#tenant +")
    public String call() {
      return "ok";
    }
  }

  @Service
  static class BadModel {
    @RateLimited(key = "'k'", model = "#body.model)")
    public String call() {
      return "ok";
    }
  }

  @Service
  static class BadCost {
    @RateLimited(key = "'k'", cost = "#{1}}")
    public String call() {
      return "ok";
    }
  }

  @Service
  @RateLimited(key = "'k'")
  static class BadClassLevel {
    @RateLimited(key = "'k'", cost = "(1")
    public String call() {
      return "ok";
    }
  }

  @Service
  static class UnknownPolicy {
    @RateLimited(policy = "gold", key = "'k'")
    public String call() {
      return "ok";
    }
  }
}
