package io.github.llmratelimiter.autoconfigure.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.SentinelGroup;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The Redis store on {@code spring.data.redis.sentinel.*}, against real processes (a master, a
 * replica and a Sentinel): it limits exactly on the master, the failure policy answers while the
 * master is dead, and once the Sentinel has promoted the replica the store decides there,
 * continuing from the replicated state.
 */
class RedisSentinelTests {

  @Test
  void runWhenSentinelIsConfiguredShouldLimitOnTheMasterAndFollowAFailover() {
    String prefix = "sentinel-" + System.nanoTime();
    try (SentinelGroup group = SentinelGroup.start()) {
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
              RateLimiterRedisAutoConfiguration.class, RateLimiterAutoConfiguration.class))
          .withPropertyValues("ratelimiter.store=redis", "ratelimiter.rpm.limit=4",
              "ratelimiter.rpm.window=1h", "ratelimiter.redis.key-prefix=" + prefix,
              "ratelimiter.redis.failure-policy=fail-closed",
              "spring.data.redis.sentinel.master=" + SentinelGroup.MASTER_NAME,
              "spring.data.redis.sentinel.nodes=127.0.0.1:" + group.sentinel().port())
          .run(context -> {
            RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
            RedisRateLimitStore store = context.getBean(RedisRateLimitStore.class);
            Supplier<Decision> call =
                () -> enforcer.acquire(null, RateLimitKey.of("tenant", null), 1).decision();
            assertThat(List.of(call.get().remaining(), call.get().remaining()))
                .containsExactly(3L, 2L);
            assertThat(RedisKeysOnServer.stateKeys(group.master(), prefix + ":{*")).hasSize(1);
            group.awaitReplicated();

            group.master().stop();
            assertThat(call.get().reason()).as("the failure policy answers")
                .isEqualTo(Reason.STORE_UNAVAILABLE);
            group.promoteReplica();
            SentinelGroup.await("the store reconnects through the Sentinel", store::ping);

            // the old master is dead: these are the new master's decisions, on the replicated state
            assertThat(List.of(call.get().reason(), call.get().reason(), call.get().reason()))
                .containsExactly(Reason.OK, Reason.OK, Reason.RPM_LIMIT);
            assertThat(RedisKeysOnServer.stateKeys(group.replica(), prefix + ":{*")).hasSize(1);
          });
    }
  }
}
