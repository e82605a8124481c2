package io.github.llmratelimiter.autoconfigure.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpointAutoConfiguration;
import io.github.llmratelimiter.gateway.internal.KeyIds;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.github.llmratelimiter.redis.RunningRedis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * Instances that share Redis need one {@code ratelimiter.key-id-secret}: without it each shows its
 * own ids, and start-up says so in a warning that names the property, never a secret.
 */
@ExtendWith(OutputCaptureExtension.class)
class KeyIdSecretRedisTests {

  private static final String WARNING = "ratelimiter.key-id-secret is not set";

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private static ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class,
            RateLimiterRedisAutoConfiguration.class, RateLimiterAutoConfiguration.class,
            RateLimiterEndpointAutoConfiguration.class))
        .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + REDIS.server().port(),
            "ratelimiter.store=redis", "management.endpoints.web.exposure.include=ratelimiter");
  }

  @Test
  void runWhenStoreIsRedisWithoutKeyIdSecretShouldWarnOnce(CapturedOutput output) {
    runner().run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(RedisRateLimitStore.class).hasSingleBean(KeyIds.class);
      assertThat(output).contains("WARN").contains(WARNING)
          .contains("Set the same ratelimiter.key-id-secret (at least 16 bytes) on every instance");
      assertThat(output.toString().split(WARNING, -1)).hasSize(2);
    });
  }

  @Test
  void runWhenStoreIsRedisWithKeyIdSecretShouldNotWarnNorLogTheSecret(CapturedOutput output) {
    String secret = "redis-shared-secret-4f1e9c2a7b";
    runner().withPropertyValues("ratelimiter.key-id-secret=" + secret).run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(KeyIds.class);
      assertThat(output).doesNotContain(WARNING).doesNotContain(secret);
    });
  }
}
