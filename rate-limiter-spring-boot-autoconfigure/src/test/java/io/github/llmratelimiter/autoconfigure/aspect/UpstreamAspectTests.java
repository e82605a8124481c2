package io.github.llmratelimiter.autoconfigure.aspect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimited;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code @RateLimited} methods and upstreams outside HTTP: the method's call is decided with its
 * policy's upstream, and the hook the method calls with the provider's response ({@link
 * RateLimitGateway#report(String, int, java.util.function.Function)}) closes the upstream for the
 * next caller until the provider's retry time.
 */
class UpstreamAspectTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class,
          RateLimiterAutoConfiguration.class, RateLimiterAspectAutoConfiguration.class))
      .withBean(ManualTicker.class)
      .withBean(Provider.class)
      .withPropertyValues("ratelimiter.policies.jobs.rpm.limit=100",
          "ratelimiter.upstreams.batch-account.rpm=100",
          "ratelimiter.upstreams.batch-account.policies=jobs");

  /** Calls the provider (a stand-in answering 429 with a retry-after) and reports its response. */
  static class Provider {

    private final RateLimitGateway gateway;

    Provider(RateLimitGateway gateway) {
      this.gateway = gateway;
    }

    @RateLimited(policy = "jobs", key = "#tenant")
    String call(String tenant) {
      Map<String, List<String>> headers = Map.of("retry-after", List.of("7"));
      gateway.report("batch-account", 429, headers::get);
      return "done for " + tenant;
    }
  }

  @Test
  void runWhenAnAnnotatedMethodReportsTheProviders429ShouldRefuseTheNextCallerUntilItsRetry() {
    runner.run(context -> {
      Provider provider = context.getBean(Provider.class);
      assertThat(provider.call("tenant-a")).isEqualTo("done for tenant-a");
      assertThatThrownBy(() -> provider.call("tenant-b"))
          .isInstanceOfSatisfying(RateLimitExceededException.class, e -> {
            assertThat(e.decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
            assertThat(e.decision().retryAfterMs()).isEqualTo(7000);
            assertThat(e.outcome().upstream().name()).isEqualTo("batch-account");
          });
      context.getBean(ManualTicker.class).advance(Duration.ofSeconds(7));
      assertThat(provider.call("tenant-b")).isEqualTo("done for tenant-b");
    });
  }
}
