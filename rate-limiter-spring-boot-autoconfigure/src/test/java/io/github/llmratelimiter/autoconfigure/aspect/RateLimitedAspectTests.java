package io.github.llmratelimiter.autoconfigure.aspect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterFailureAnalyzerAccess;
import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimited;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.stereotype.Service;

/** The aspect outside HTTP: SpEL key and cost, the exception carrying the decision, start-up checks. */
class RateLimitedAspectTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class,
          RateLimiterAutoConfiguration.class, RateLimiterAspectAutoConfiguration.class))
      .withBean(ManualTicker.class)
      .withBean(TestGateway.Tokens.class)
      .withPropertyValues("ratelimiter.policies.annotated.rpm.limit=100",
          "ratelimiter.policies.annotated.burst.capacity=10",
          "ratelimiter.policies.annotated.burst.refill-per-second=2");

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
        org.springframework.beans.factory.ObjectProvider<io.github.llmratelimiter.autoconfigure.RateLimitRequestSupport> r,
        org.springframework.beans.factory.ObjectProvider<io.github.llmratelimiter.autoconfigure.ReactiveRateLimitRequestSupport> rr,
        org.springframework.beans.factory.BeanFactory bf) {
      return new RateLimitedAspect(gateway, r, rr, bf);
    }
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
  static class UnknownPolicy {
    @RateLimited(policy = "gold", key = "'k'")
    public String call() {
      return "ok";
    }
  }
}
