package io.github.llmratelimiter.autoconfigure.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.redis.RedisServer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Two gateway instances (two application contexts) on one redis-server share the upstream's
 * order: the starter gives each room the Redis store's order, and a call waiting on one instance
 * is admitted once the other gives back the upstream's slot.
 */
class RedisUpstreamOrderInstancesTests {

  private static RedisServer server;

  @BeforeAll
  static void start() {
    server = RedisServer.start();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  private ApplicationContextRunner instance() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
            RateLimiterRedisAutoConfiguration.class, RateLimiterAutoConfiguration.class))
        .withPropertyValues("ratelimiter.store=redis", "spring.data.redis.host=127.0.0.1",
            "spring.data.redis.port=" + server.port(),
            "ratelimiter.policies.chat.rpm.limit=100", "ratelimiter.policies.chat.max-wait=30s",
            "ratelimiter.upstreams.u.concurrency=1", "ratelimiter.upstreams.u.models=gpt-4o*");
  }

  @Test
  void aCallWaitingOnOneInstanceIsAdmittedWhenTheOtherGivesBackTheSlot() {
    instance().run(a -> instance().run(b -> {
      assertThat(a).hasNotFailed();
      assertThat(b).hasNotFailed();
      RateLimitEnforcer onA = a.getBean(RateLimitEnforcer.class);
      RateLimitEnforcer onB = b.getBean(RateLimitEnforcer.class);
      RateLimitStore store = a.getBean(RateLimitStore.class);
      Upstream u = onA.upstreamRoutes().upstream("u").orElseThrow();
      RateLimitOutcome held = onA.acquire("chat", RateLimitKey.of("sk-1", "gpt-4o"), 1);
      assertThat(held.decision().allowed()).isTrue();

      CompletableFuture<RateLimitOutcome> waiting = onB.acquireAsync("chat",
          RateLimitKey.of("sk-2", "gpt-4o"), 1, () -> 0).toCompletableFuture();
      assertThat(store.upstreamOrder()).isNotNull();
      await().atMost(Duration.ofSeconds(10)).until( // B's call entered the order in Redis
          () -> store.upstreamOrder().waiting(u).toCompletableFuture().join() == 1);
      assertThat(waiting).isNotDone();

      long before = System.nanoTime();
      held.slots().release(); // on A: B hears of it through Redis

      assertThat(waiting.get(10, TimeUnit.SECONDS).decision().allowed()).isTrue();
      System.out.printf("admitted on B %d ms after A gave back the slot (a poll: 1,000)%n",
          (System.nanoTime() - before) / 1_000_000);
      assertThat(store.upstreamOrder().waiting(u).toCompletableFuture().join()).isZero();
    }));
  }
}
