package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two independent stores (two gateway instances: separate clients and connections) on one Redis,
 * in server-time mode, hammered from several threads each: together they never admit more than
 * the limit, counted exactly.
 */
class SharedRedisConcurrencyTests {

  private static final int THREADS_PER_STORE = 4;
  private static final int CALLS_PER_THREAD = 60;

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
  void windowAdmitsExactlyTheLimitAcrossInstances(Composition mode) throws Exception {
    Budget b = Budget.of("rpm", new WindowLimit(100, Duration.ofMinutes(10)),
        new BucketLimit(1000, 0));
    List<Decision> all = hammer((store, thread) -> store.acquire(b, "hot", 1, mode));
    assertThat(all).filteredOn(Decision::allowed).hasSize(100);
    assertThat(all).filteredOn(d -> d.reason() == Reason.RPM_LIMIT).hasSize(all.size() - 100);
    assertThat(admin(one).inspect(b, "hot").orElseThrow().windowUsed()).isEqualTo(100);
    assertThat(admin(two).inspect(b, "hot").orElseThrow().tokens()).isEqualTo(900.0);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void bucketAdmitsExactlyItsTokensAcrossInstances(Composition mode) throws Exception {
    Budget b = Budget.of("burst", new WindowLimit(10_000, Duration.ofMinutes(10)),
        new BucketLimit(75, 0));
    List<Decision> all = hammer((store, thread) -> store.acquire(b, "hot", 0.5, mode));
    assertThat(all).filteredOn(Decision::allowed).hasSize(150);
    long expectedWindow = mode == Composition.SEQUENTIAL ? all.size() : 150; // burst denies stay counted
    assertThat(admin(one).inspect(b, "hot").orElseThrow().windowUsed()).isEqualTo(expectedWindow);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void siblingsOnBothInstancesNeverOverAdmitTheSharedLevel(Composition mode) throws Exception {
    Budget org = new Budget("org", new WindowLimit(90, Duration.ofMinutes(10)), null);
    Budget key = new Budget("key", new WindowLimit(25, Duration.ofMinutes(10)), null);
    // 8 threads on 5 sibling keys: each key is tried at least 60 times, 5 x 25 > 90
    List<Decision> all = hammer((store, thread) ->
        store.acquire(List.of(org, key), List.of("acme", "k" + thread % 5), 1, mode));
    long allowed = all.stream().filter(Decision::allowed).count();
    long keyDenies = all.stream().filter(d -> d.denied() && d.level().equals("key")).count();
    assertThat(admin(one).inspect(org, "acme").orElseThrow().windowUsed()).isEqualTo(90);
    if (mode == Composition.RESERVE_COMMIT) {
      assertThat(allowed).isEqualTo(90);
    } else {
      assertThat(allowed + keyDenies).isEqualTo(90); // a key-level deny keeps its org charge
    }
    for (int k = 0; k < 5; k++) {
      // a key whose thread started after the org level was full was never charged: untracked
      assertThat(admin(two).inspect(key, "k" + k).map(KeySnapshot::windowUsed).orElse(0L))
          .isLessThanOrEqualTo(25);
    }
  }

  /** Runs the call from every thread of both stores at once; returns every decision. */
  private List<Decision> hammer(BiFunction<RedisRateLimitStore, Integer, Decision> call)
      throws Exception {
    return TwoInstances.hammer(one, two, THREADS_PER_STORE, CALLS_PER_THREAD,
        (store, thread, i) -> call.apply(store, thread));
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
