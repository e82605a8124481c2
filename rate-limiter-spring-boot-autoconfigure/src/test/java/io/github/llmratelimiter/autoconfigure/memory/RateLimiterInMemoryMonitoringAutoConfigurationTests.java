package io.github.llmratelimiter.autoconfigure.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class RateLimiterInMemoryMonitoringAutoConfigurationTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class,
          RateLimiterInMemoryMonitoringAutoConfiguration.class))
      .withPropertyValues("ratelimiter.in-memory.max-keys-per-budget=4",
          "ratelimiter.policies.chat.rpm.limit=5");

  @Test
  void runWhenTheStoreIsInMemoryShouldReportUpWithTrackedKeysAndCapUsage() {
    runner.run(context -> {
      HealthIndicator indicator = context.getBean("rateLimiterHealthIndicator", HealthIndicator.class);
      Health fresh = indicator.health();
      assertThat(fresh.getStatus()).isEqualTo(Status.UP);
      assertThat(fresh.getDetails()).containsEntry("store", "memory")
          .containsEntry("maxKeysPerBudget", 4L).containsEntry("trackedKeys", 0L)
          .containsEntry("capUsage", 0.0)
          .containsEntry("budgets", Map.of("default", 0L, "chat", 0L)).hasSize(5);

      RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
      for (String key : new String[] {"sk-a-secret", "sk-b-secret", "sk-c-secret"}) {
        assertThat(enforcer.acquire("chat", RateLimitKey.of(key, null), 1).decision().allowed()).isTrue();
      }
      enforcer.acquire(null, RateLimitKey.of("sk-a-secret", null), 1);
      Health used = indicator.health();
      assertThat(used.getStatus()).isEqualTo(Status.UP);
      assertThat(used.getDetails()).containsEntry("trackedKeys", 4L)
          .containsEntry("capUsage", 0.75) // chat tracks 3 of 4
          .containsEntry("budgets", Map.of("default", 1L, "chat", 3L));
      assertThat(used.getDetails().toString()).doesNotContain("secret");
    });
  }

  @Test
  void runWhenHealthIsOffOrAbsentShouldNotReportTheInMemoryStore() {
    runner.withPropertyValues("management.health.ratelimiter.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean("rateLimiterHealthIndicator"));
    runner.withClassLoader(new FilteredClassLoader(HealthIndicator.class))
        .run(context -> assertThat(context).doesNotHaveBean("rateLimiterHealthIndicator"));
  }

  @Test
  void runWhenTheApplicationDefinesItsOwnStoreShouldNotReportItAsTheInMemoryStore() {
    runner.withBean("myStore", RateLimitStore.class, () -> RateLimitStore.inMemory())
        .run(context -> assertThat(context).hasSingleBean(RateLimitStore.class)
            .hasBean("myStore").doesNotHaveBean("rateLimiterHealthIndicator"));
  }

  @Test
  void runWhenTheApplicationDefinesTheIndicatorShouldKeepIt() {
    runner.withBean("rateLimiterHealthIndicator", HealthIndicator.class,
            () -> () -> Health.down().build())
        .run(context -> assertThat(context.getBean("rateLimiterHealthIndicator", HealthIndicator.class)
            .health().getStatus()).isEqualTo(Status.DOWN));
  }
}
