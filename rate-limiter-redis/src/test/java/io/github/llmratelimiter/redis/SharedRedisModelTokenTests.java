package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two gateway instances (separate stores, clients and connections) sharing one Redis enforce one
 * model-token (TPM) budget together: reserve an estimate, reconcile with the usage, and the tokens
 * admitted never exceed the limit plus the calls' under-estimates.
 */
class SharedRedisModelTokenTests {

  private RedisRateLimitStore one;
  private RedisRateLimitStore two;

  @BeforeEach
  void twoInstances() {
    String prefix = TestRedis.freshPrefix();
    one = TestRedis.gatewayInstance(prefix);
    two = TestRedis.gatewayInstance(prefix);
  }


  @AfterEach
  void close() {
    one.close();
    two.close();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void twoInstancesEnforceOneTpmTogether(Composition mode) throws Exception {
    Budget b = new Budget("tpm", new WindowLimit(100_000, Duration.ofMinutes(10)), null,
        new ModelTokenLimit(20_000, Duration.ofMinutes(10)));
    CountDownLatch go = new CountDownLatch(1);
    List<CompletableFuture<long[]>> runs = new ArrayList<>();
    for (int t = 0; t < 6; t++) {
      RedisRateLimitStore store = t % 2 == 0 ? one : two;
      runs.add(CompletableFuture.supplyAsync(() -> {
        awaitUninterruptibly(go);
        long actualSum = 0;
        long underSum = 0;
        long allowed = 0;
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; i < 60; i++) {
          long estimate = 100 + random.nextInt(300);
          Reservation r = store.reserve(List.of(b), List.of("tenant"), 1, estimate, mode);
          if (r.decision().allowed()) {
            allowed++;
            long actual = random.nextInt(8) == 0
                ? estimate + random.nextInt(50) : random.nextLong(estimate + 1);
            store.reconcile(r, actual);
            actualSum += actual;
            underSum += Math.max(0, actual - estimate);
          }
        }
        return new long[] {actualSum, underSum, allowed};
      }));
    }
    go.countDown();
    long actual = 0;
    long under = 0;
    long allowed = 0;
    for (CompletableFuture<long[]> run : runs) {
      long[] r = run.get(60, TimeUnit.SECONDS);
      actual += r[0];
      under += r[1];
      allowed += r[2];
    }
    assertThat(actual).isLessThanOrEqualTo(20_000 + under);
    assertThat(admin(one).inspect(b, "tenant").orElseThrow().modelTokensUsed()).isEqualTo(actual);
    assertThat(admin(two).inspect(b, "tenant").orElseThrow().windowUsed())
        .isEqualTo(mode == Composition.SEQUENTIAL ? 360 : allowed); // sequential TPM denies stay counted
    assertThat(actual).isGreaterThan(15_000); // the budget was used up, not starved
  }

  private static void awaitUninterruptibly(CountDownLatch latch) {
    try {
      latch.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
