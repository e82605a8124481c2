package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code ratelimiter.quota-file} as an application sets it: a daily quota from the properties
 * spent before a restart stays spent after it, and a corrupt file stops start-up with an analysis
 * that names the file and the property.
 */
class QuotaFilePropertyTests {

  private static final InstantSource CLOCK = () -> Instant.parse("2026-03-14T10:00:00Z");

  @TempDir Path dir;

  private ApplicationContextRunner runner(Path file) {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class))
        .withBean(InstantSource.class, () -> CLOCK)
        .withPropertyValues("ratelimiter.quota-file=" + file,
            "ratelimiter.policies.chat.quotas.daily.unit=requests",
            "ratelimiter.policies.chat.quotas.daily.limit=2",
            "ratelimiter.policies.chat.quotas.daily.period=day");
  }

  private static Reason call(RateLimitEnforcer enforcer) {
    RateLimitOutcome outcome = enforcer.acquire("chat", new RateLimitKey("sk-tenant-1", null), 1);
    return outcome.decision().reason();
  }

  @Test
  void runWhenQuotaFileIsSetShouldKeepTheQuotasSpentAcrossARestart() {
    Path file = dir.resolve("quotas.bin");
    runner(file).run(context -> {
      assertThat(context).hasNotFailed();
      RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
      assertThat(call(enforcer)).isEqualTo(Reason.OK);
      assertThat(call(enforcer)).isEqualTo(Reason.OK);
      assertThat(call(enforcer)).isEqualTo(Reason.QUOTA_EXCEEDED);
    });
    assertThat(file).exists();
    runner(file).run(context -> {
      assertThat(context.getBean(RateLimitStore.class).quotaPersistence()).isPresent();
      assertThat(call(context.getBean(RateLimitEnforcer.class))).isEqualTo(Reason.QUOTA_EXCEEDED);
    });
  }

  @Test
  void runWhenQuotaFileIsCorruptShouldFailStartUpNamingTheFileAndLeaveItAsItIs() throws Exception {
    Path file = dir.resolve("quotas.bin");
    Files.write(file, "not a quota file".getBytes());
    runner(file).run(context -> {
      assertThat(context).hasFailed();
      String analysis = RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure());
      assertThat(analysis).contains(file.toAbsolutePath().toString())
          .contains("ratelimiter.quota-file").contains("not reset silently");
    });
    assertThat(Files.readString(file)).isEqualTo("not a quota file");
  }
}
