package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.MaintenanceScheduler;
import io.github.llmratelimiter.core.QuotaFileException;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Ticker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * The quota file of the in-memory store in an application: read at start-up, written at every
 * interval and when the context closes, refused whole when it is corrupt.
 */
@ExtendWith(OutputCaptureExtension.class)
class QuotaFileLifecycleTests {

  private static final Instant NOW = Instant.parse("2025-03-14T10:00:00Z");
  private static final long DAY_END = Instant.parse("2025-03-15T00:00:00Z").toEpochMilli();
  private static final String KEY = "sk-secret-tenant-1";
  private static final Budget DAILY = new Budget("chat", null, null, null, null,
      List.of(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 3, QuotaPeriod.DAY)), null);

  @TempDir Path dir;

  private final Saves saves = new Saves();

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class))
      .withUserConfiguration(QuotaFileConfiguration.class)
      .withBean(Saves.class, () -> saves);

  private static Decision call(RateLimitStore store) {
    Reservation r = store.reserve(List.of(DAILY), List.of(KEY), 1, Consumption.ofCall(0, 0),
        Composition.RESERVE_COMMIT);
    return r.decision();
  }

  @Test
  void runWhenQuotaFileSetShouldWriteItOnCloseAndReadItBackInTheNextContext() {
    Path file = dir.resolve("quotas.bin");
    runner.withPropertyValues("test.quota-file=" + file).run(context -> {
      RateLimitStore store = context.getBean(RateLimitStore.class);
      for (int i = 0; i < 3; i++) {
        assertThat(call(store).allowed()).isTrue();
      }
      assertThat(call(store).allowed()).isFalse();
      assertThat(file).doesNotExist(); // no interval has passed, the context runs
    });
    assertThat(file).exists();

    runner.withPropertyValues("test.quota-file=" + file).run(context -> {
      RateLimitStore store = context.getBean(RateLimitStore.class);
      assertThat(store.administration().orElseThrow().quotas(DAILY, KEY))
          .extracting(QuotaStatus::used).containsExactly(3L);
      Decision denied = call(store);
      assertThat(denied.reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
      assertThat(denied.retryAfterMs()).isEqualTo(DAY_END - NOW.toEpochMilli());
    });
  }

  @Test
  void runWhenQuotaFileMissingShouldStartWithEveryQuotaUnused(CapturedOutput output) {
    Path file = dir.resolve("quotas.bin");
    runner.withPropertyValues("test.quota-file=" + file).run(context -> {
      assertThat(context).hasNotFailed();
      RateLimitStore store = context.getBean(RateLimitStore.class);
      assertThat(store.administration().orElseThrow().quotas(DAILY, KEY))
          .extracting(QuotaStatus::used).containsExactly(0L);
    });
    assertThat(output).contains("No quota file " + file + " yet: every quota starts unused");
  }

  @Test
  void runWhenIntervalPassesShouldWriteTheFileWhileTheApplicationRuns() {
    Path file = dir.resolve("quotas.bin");
    runner.withPropertyValues("test.quota-file=" + file).run(context -> {
      RateLimitStore store = context.getBean(RateLimitStore.class);
      call(store);
      assertThat(saves.tasks).hasSize(1);

      saves.tasks.get(0).run();

      assertThat(file).exists();
      RateLimitStore other =
          RateLimitStore.inMemory(Ticker.system(), () -> NOW, 10, task -> new CompletableFuture<>());
      assertThat(other.quotaPersistence().orElseThrow().load(file)).isEqualTo(1);
      assertThat(saves.futures.get(0)).isNotCancelled();
    });
    assertThat(saves.futures.get(0)).isCancelled();
  }

  @Test
  void runWhenWriteFailsShouldLogAWarnWithoutTheKeyAndKeepDeciding(CapturedOutput output)
      throws Exception {
    Path sub = Files.createDirectory(dir.resolve("sub"));
    Path file = sub.resolve("quotas.bin");
    runner.withPropertyValues("test.quota-file=" + file).run(context -> {
      RateLimitStore store = context.getBean(RateLimitStore.class);
      call(store);
      Files.delete(sub);

      saves.tasks.get(0).run();

      assertThat(call(store).allowed()).isTrue();
    });
    assertThat(output).contains("Could not write the quota counters to " + file)
        .doesNotContain(KEY);
  }

  @Test
  void runWhenQuotaFileCorruptShouldFailStartupNamingTheFileAndKeepIt() throws Exception {
    Path file = dir.resolve("quotas.bin");
    runner.withPropertyValues("test.quota-file=" + file).run(context -> call(context
        .getBean(RateLimitStore.class)));
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length / 2] ^= 0x01;
    Files.write(file, bytes);

    runner.withPropertyValues("test.quota-file=" + file).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .isInstanceOf(QuotaFileException.class)
          .hasMessageStartingWith("Quota file '" + file + "' is corrupt or truncated");
    });
    assertThat(Files.readAllBytes(file)).isEqualTo(bytes); // never replaced by an empty one
  }

  @Test
  void runWhenQuotaFileForeignShouldFailStartupNamingTheFile() throws Exception {
    Path file = dir.resolve("application.yml");
    Files.writeString(file, "ratelimiter:\n  rpm:\n    limit: 5\n");

    runner.withPropertyValues("test.quota-file=" + file).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .isInstanceOf(QuotaFileException.class)
          .hasMessageStartingWith("Quota file '" + file + "' is not a quota file of this rate"
              + " limiter");
    });
  }

  @Test
  void runWhenDirectoryMissingShouldFailStartupNamingTheProperty() {
    Path file = dir.resolve("missing").resolve("quotas.bin");

    runner.withPropertyValues("test.quota-file=" + file).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .isInstanceOf(InvalidRateLimitPropertyException.class)
          .hasMessageContaining("'ratelimiter.quota-file'");
    });
  }

  @Test
  void runWhenIntervalNotPositiveShouldFailStartupNamingTheProperty() {
    runner.withPropertyValues("test.quota-file=" + dir.resolve("quotas.bin"),
        "test.quota-file-interval-ms=0").run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).rootCause()
              .isInstanceOf(InvalidRateLimitPropertyException.class)
              .hasMessage("Invalid value 'PT0S' for property 'ratelimiter.quota-file-interval':"
                  + " expected a positive duration, for example 60s");
        });
  }

  @Test
  void runWhenStoreKeepsNoQuotasInMemoryShouldFailStartupNamingTheProperty() {
    RateLimitStore memory = RateLimitStore.inMemory();
    RateLimitStore elsewhere = new RateLimitStore() {
      @Override
      public Decision acquire(List<Budget> levels, List<String> keys, double cost,
          Composition composition) {
        return memory.acquire(levels, keys, cost, composition);
      }

      @Override
      public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
          long estimatedModelTokens, Composition composition) {
        return memory.reserve(levels, keys, cost, estimatedModelTokens, composition);
      }

      @Override
      public void reconcile(Reservation reservation, long actualModelTokens) {}

      @Override
      public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {}

      @Override
      public void release(Reservation reservation) {}
    };
    try {
      new ApplicationContextRunner()
          .withBean("rateLimitStore", RateLimitStore.class, () -> elsewhere)
          .withBean(QuotaFileLifecycle.class, () -> new QuotaFileLifecycle(elsewhere,
              dir.resolve("quotas.bin"), Duration.ofSeconds(60)))
          .run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                .isInstanceOf(InvalidRateLimitPropertyException.class)
                .hasMessageContaining("'ratelimiter.quota-file'")
                .hasMessageContaining("only the in-memory store saves them to a file");
          });
    } finally {
      memory.close();
    }
  }

  /** What the auto-configuration wires from the properties, with a fixed wall clock. */
  @Configuration(proxyBeanMethods = false)
  static class QuotaFileConfiguration {

    @Bean
    RateLimitStore rateLimitStore() {
      return RateLimitStore.inMemory(Ticker.system(), () -> NOW, 1_000,
          task -> new CompletableFuture<>());
    }

    @Bean
    QuotaFileLifecycle quotaFileLifecycle(RateLimitStore store, Environment env, Saves saves) {
      return new QuotaFileLifecycle(store, Path.of(env.getRequiredProperty("test.quota-file")),
          Duration.ofMillis(env.getProperty("test.quota-file-interval-ms", Long.class, 60_000L)),
          saves);
    }
  }

  /** Keeps the periodic writes for the test to run by hand. */
  static final class Saves implements MaintenanceScheduler {

    final List<Runnable> tasks = new ArrayList<>();
    final List<CompletableFuture<Void>> futures = new ArrayList<>();

    @Override
    public synchronized Future<?> schedule(Runnable task) {
      tasks.add(task);
      CompletableFuture<Void> f = new CompletableFuture<>();
      futures.add(f);
      return f;
    }
  }
}
