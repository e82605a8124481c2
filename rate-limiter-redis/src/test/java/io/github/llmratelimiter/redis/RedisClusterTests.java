package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What only a Redis Cluster shows: state spread over the masters, cluster-wide scans and flushes. */
class RedisClusterTests {

  private static final Budget ORG = Budget.of("org",
      new WindowLimit(10, Duration.ofMinutes(1)), new BucketLimit(5, 1));
  private static final Budget KEY = new Budget("key", new WindowLimit(3, Duration.ofMinutes(1)), null);

  @Test
  void hierarchiesOfManyRootsSpreadOverEveryMasterAndAreFoundAgain() {
    String prefix = TestRedis.freshPrefix();
    try (RedisRateLimitStore store = TestRedis.cluster(new ManualTicker()).keyPrefix(prefix).build()) {
      for (int i = 0; i < 30; i++) {
        assertThat(store.acquire(List.of(ORG, KEY), List.of("org" + i, "org" + i + "/k"), 1,
            Composition.RESERVE_COMMIT).allowed()).isTrue();
      }
      for (RedisServer node : TestRedis.clusterNodes()) {
        assertThat(keysOn(node, prefix)).as("keys on node %d", node.port()).isPositive();
      }
      assertThat(admin(store).trackedKeys(ORG)).isEqualTo(30);
      assertThat(admin(store).trackedKeys(KEY)).isEqualTo(30);
      assertThat(admin(store).top(ORG, 100)).hasSize(30);
      assertThat(admin(store).inspect(KEY, "org17/k").orElseThrow().windowUsed()).isEqualTo(1);
      assertThat(admin(store).reset(ORG, "org17")).isTrue();
      assertThat(admin(store).top(ORG, 100)).hasSize(29);
      // an estimate of the keys called in the period: a reset does not lower it
      assertThat(admin(store).trackedKeys(ORG)).isEqualTo(30);
      assertThat(store.errorCount()).isZero();
    }
  }

  @Test
  void scriptFlushOnEveryMasterNeverReachesACaller() {
    try (RedisRateLimitStore store = TestRedis.cluster(new ManualTicker()).build()) {
      for (int i = 0; i < 10; i++) {
        store.acquire(ORG, "t" + i, 1, Composition.SEQUENTIAL);
      }
      for (RedisServer node : TestRedis.clusterNodes()) {
        RedisClient client = RedisClient.create(node.uri());
        try (StatefulRedisConnection<String, String> c = client.connect()) {
          c.sync().scriptFlush();
        } finally {
          client.shutdown();
        }
      }
      for (int i = 0; i < 10; i++) {
        assertThat(store.acquire(ORG, "t" + i, 1, Composition.SEQUENTIAL).remaining()).isEqualTo(3);
      }
      assertThat(store.errorCount()).isZero();
    }
  }

  private static long keysOn(RedisServer node, String prefix) {
    RedisClient client = RedisClient.create(node.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      return c.sync().keys(prefix + ":*").size();
    } finally {
      client.shutdown();
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
