package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import io.github.llmratelimiter.gateway.UpstreamWaits;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The properties of waiting for an upstream: {@code max-wait} per policy and per plan's policy
 * (inherited from the top level, then the policy), a plan's {@code weight} and {@code priority},
 * an upstream's {@code max-waiters}; the waiting room exists only when upstreams do, and closes
 * with the context. Invalid values stop start-up naming the property.
 */
class UpstreamWaitPropertiesTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class));

  private static final String[] UPSTREAM = {
      "ratelimiter.policies.chat.rpm.limit=100",
      "ratelimiter.policies.batch.rpm.limit=100",
      "ratelimiter.upstreams.u.rpm=10", "ratelimiter.upstreams.u.models=gpt-4o*"};

  @Test
  void runWhenMaxWaitsAreConfiguredShouldInheritThemFromTheTopLevelThenThePolicy() {
    runner.withPropertyValues(UPSTREAM).withPropertyValues(
            "ratelimiter.max-wait=2s",
            "ratelimiter.policies.chat.max-wait=10s",
            "ratelimiter.plans.pro.weight=2.5",
            "ratelimiter.plans.pro.priority=-1",
            "ratelimiter.plans.pro.policies.chat.max-wait=30s",
            "ratelimiter.plans.pro.policies.batch.rpm.limit=200",
            "ratelimiter.plans.free.policies.batch.max-wait=0s")
        .run(context -> {
          assertThat(context).hasNotFailed();
          UpstreamWaits waits = context.getBean(RateLimitEnforcer.class).upstreamWaits();
          assertThat(waits.maxWait("default", "default")).isEqualTo(Duration.ofSeconds(2));
          assertThat(waits.maxWait("chat", "default")).isEqualTo(Duration.ofSeconds(10));
          assertThat(waits.maxWait("batch", "default")).isEqualTo(Duration.ofSeconds(2));
          assertThat(waits.maxWait("chat", "pro")).isEqualTo(Duration.ofSeconds(30));
          assertThat(waits.maxWait("batch", "pro")).isEqualTo(Duration.ofSeconds(2));
          assertThat(waits.maxWait("chat", "free")).isEqualTo(Duration.ofSeconds(10));
          assertThat(waits.maxWait("batch", "free")).isZero();
          assertThat(waits.weight("pro")).isEqualTo(2.5);
          assertThat(waits.weight("free")).isEqualTo(1.0);
          assertThat(waits.priority("pro")).isEqualTo(-1);
          assertThat(waits.priority("free")).isZero();
        });
  }

  @Test
  void runWhenNothingIsConfiguredShouldWaitNowhere() {
    runner.run(context -> {
      assertThat(context).hasNotFailed();
      assertThat(context).doesNotHaveBean(UpstreamWaitingRoom.class);
      RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
      assertThat(enforcer.waitingRoom()).isNull();
      assertThat(enforcer.upstreamWaits().maxWait("default", "default")).isZero();
    });
  }

  @Test
  void runWhenUpstreamsAreConfiguredShouldGiveTheEnforcerARoomThatClosesWithTheContext() {
    AtomicReference<UpstreamWaitingRoom> room = new AtomicReference<>();
    runner.withPropertyValues(UPSTREAM).withPropertyValues("ratelimiter.upstreams.u.max-waiters=1")
        .run(context -> {
          assertThat(context).hasNotFailed();
          room.set(context.getBean(UpstreamWaitingRoom.class));
          assertThat(context.getBean(RateLimitEnforcer.class).waitingRoom()).isSameAs(room.get());
        });
    // closed: a call is decided at once and never waits, though its upstream denies it
    CompletableFuture<String> decided = room.get().await(
        new UpstreamWaitingRoom.Call("u", "t", 1, 0, 0, Duration.ofMinutes(1)),
        UpstreamWaitingRoom.Attempt.of(() -> CompletableFuture.completedFuture("denied"),
            x -> io.github.llmratelimiter.core.Decision.retryableDeny(
                io.github.llmratelimiter.core.Reason.UPSTREAM_LIMIT, 0, 60_000, 60_000, "u"),
            ms -> "never tried", x -> { })).toCompletableFuture();
    assertThat(decided).isDone();
    assertThat(decided.getNow(null)).isEqualTo("denied");
  }

  @Test
  void runWhenTheStoreKeepsAnOrderShouldMakeTheRoomsCallsWaitInIt() {
    runner.withPropertyValues(UPSTREAM).withPropertyValues("ratelimiter.upstreams.u.rpm=1",
            "ratelimiter.policies.chat.max-wait=30s")
        .run(context -> {
          assertThat(context).hasNotFailed();
          RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
          RateLimitStore store = context.getBean(RateLimitStore.class);
          Upstream u = enforcer.upstreamRoutes().upstream("u").orElseThrow();
          RateLimitKey key = RateLimitKey.of("sk-1", "gpt-4o");
          assertThat(enforcer.acquire("chat", key, 1).decision().allowed()).isTrue();

          CompletableFuture<RateLimitOutcome> waiting =
              enforcer.acquireAsync("chat", key, 1, () -> 0).toCompletableFuture();

          assertThat(waiting).isNotDone();
          assertThat(store.upstreamOrder().waiting(u).toCompletableFuture().join()).isEqualTo(1);
          waiting.cancel(false); // it leaves the order with it
          assertThat(store.upstreamOrder().waiting(u).toCompletableFuture().join()).isZero();
        });
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "ratelimiter.max-wait|ratelimiter.max-wait=-1s",
      "ratelimiter.max-wait|ratelimiter.max-wait=2h",
      "ratelimiter.policies.chat.max-wait|ratelimiter.policies.chat.max-wait=-5ms",
      "ratelimiter.plans.pro.policies.chat.max-wait|ratelimiter.plans.pro.policies.chat.max-wait=-1s",
      "ratelimiter.plans.pro.weight|ratelimiter.plans.pro.weight=0",
      "ratelimiter.plans.pro.weight|ratelimiter.plans.pro.weight=-2",
      "ratelimiter.upstreams.u.max-waiters|ratelimiter.upstreams.u.max-waiters=0",
  })
  void runWhenAWaitValueIsInvalidShouldFailNamingTheProperty(String property, String setting) {
    runner.withPropertyValues(UPSTREAM).withPropertyValues(setting).run(context -> {
      assertThat(context).hasFailed();
      assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
          .contains("'" + property + "'");
    });
  }
}
