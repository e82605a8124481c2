package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.metrics.RateLimiterMetricsAutoConfiguration;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.MaintenanceScheduler;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The in-memory store bean's background maintenance: its interval, its scheduler, its end. */
class InMemoryStoreMaintenanceTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class))
      .withPropertyValues("ratelimiter.rpm.limit=5", "ratelimiter.rpm.window=1s");

  private static Budget budget(RateLimitPolicies policies) {
    return policies.policy(null).levels().get(0).budget();
  }

  private static void charge(RateLimitStore store, Budget budget, int keys) {
    for (int i = 0; i < keys; i++) {
      assertThat(store.acquire(budget, "sk-tenant-" + i, 1, Composition.SEQUENTIAL).allowed()).isTrue();
    }
  }

  @Test
  void runWhenMaintenanceSchedulerBeanShouldRunTheStoreMaintenanceOnItAndStopItOnClose() {
    CapturingScheduler scheduler = new CapturingScheduler();
    runner.withConfiguration(AutoConfigurations.of(RateLimiterMetricsAutoConfiguration.class))
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .withBean(ManualTicker.class, ManualTicker::new)
        .withBean(MaintenanceScheduler.class, () -> scheduler)
        .run(context -> {
          RateLimitStore store = context.getBean(RateLimitStore.class);
          Budget budget = budget(context.getBean(RateLimitPolicies.class));
          MeterRegistry meters = context.getBean(MeterRegistry.class);
          charge(store, budget, 20);
          context.getBean(ManualTicker.class).advance(Duration.ofSeconds(1));
          assertThat(tracked(meters, budget)).isEqualTo(20); // no step has run yet
          assertThat(scheduler.tasks).hasSize(1);
          scheduler.tasks.get(0).run(); // no call touches the budget again: the step alone
          assertThat(tracked(meters, budget)).isZero();
          assertThat(scheduler.futures.get(0)).isNotCancelled();
        });
    assertThat(scheduler.futures.get(0)).isCancelled(); // the context closed the store
  }

  private static double tracked(MeterRegistry meters, Budget budget) {
    return meters.get("ratelimiter.keys.tracked").tag("budget", budget.name()).gauge().value();
  }

  @Test
  void runWhenMaintenanceIntervalSetShouldDropIdleKeysThatNoCallTouchesAgain() {
    runner.withBean(ManualTicker.class, ManualTicker::new)
        .withPropertyValues("ratelimiter.in-memory.maintenance-interval=20ms")
        .run(context -> {
          RateLimitStore store = context.getBean(RateLimitStore.class);
          Budget budget = budget(context.getBean(RateLimitPolicies.class));
          charge(store, budget, 20);
          context.getBean(ManualTicker.class).advance(Duration.ofSeconds(1));
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
          while (admin(store).trackedKeys(budget) > 0) { // the shared maintenance thread, every 20 ms
            assertThat(System.nanoTime()).as("idle keys dropped within 30 s").isLessThan(deadline);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
          }
        });
  }

  @ParameterizedTest
  @ValueSource(strings = {"0s", "-1s", "106752d"})
  void runWhenMaintenanceIntervalInvalidShouldFailNamingIt(String interval) {
    runner.withPropertyValues("ratelimiter.in-memory.maintenance-interval=" + interval)
        .run(context -> {
          assertThat(context).hasFailed();
          FailureAnalysis analysis =
              new RateLimiterFailureAnalyzer().analyze(context.getStartupFailure());
          assertThat(analysis).isNotNull();
          assertThat(analysis.getDescription())
              .contains("'ratelimiter.in-memory.maintenance-interval'")
              .contains("a positive duration");
          assertThat(analysis.getAction()).contains("ratelimiter.in-memory.maintenance-interval");
        });
  }

  /** Keeps each task and its future; runs nothing unless the test does. */
  static final class CapturingScheduler implements MaintenanceScheduler {

    final List<Runnable> tasks = new ArrayList<>();
    final List<CompletableFuture<Void>> futures = new ArrayList<>();

    @Override
    public synchronized Future<?> schedule(Runnable maintenance) {
      tasks.add(maintenance);
      CompletableFuture<Void> f = new CompletableFuture<>();
      futures.add(f);
      return f;
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
