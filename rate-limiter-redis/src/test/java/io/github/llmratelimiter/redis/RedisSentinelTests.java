package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The store on a master found through Sentinel (real processes: a master, a replica and a
 * Sentinel), built from a {@code redis-sentinel://} URI: it limits exactly on the master, answers by
 * the failure policy while the master is dead, and after the Sentinel promoted the replica decides
 * on the new master, continuing from the replicated state.
 */
class RedisSentinelTests {

  /** Five calls per hour: no window slides during the test, however slow the failover. */
  private static final Budget FIVE = new Budget("rpm", new WindowLimit(5, Duration.ofHours(1)), null);

  private SentinelGroup group;

  @BeforeEach
  void startGroup() {
    group = SentinelGroup.start();
  }

  @AfterEach
  void stopGroup() {
    group.close();
  }

  @Test
  void limitsExactlyOnTheMasterAndFollowsAFailoverToThePromotedReplica() {
    String prefix = TestRedis.freshPrefix();
    String uri = "redis-sentinel://127.0.0.1:" + group.sentinel().port() + "#"
        + SentinelGroup.MASTER_NAME;
    try (RedisRateLimitStore store = RedisRateLimitStore.builder(uri)
        .keyPrefix(prefix)
        .commandTimeout(TestRedis.TEST_TIMEOUT)
        .failurePolicy(FailurePolicy.FAIL_CLOSED)
        // no heartbeat during the outage: its failures, counted on the breaker while a slow
        // failover runs, would leave the store degraded after it (which this test does not ask)
        .heartbeatInterval(Duration.ofHours(1))
        .build()) {
      for (int remaining = 4; remaining >= 2; remaining--) {
        assertThat(acquire(store)).satisfies(d -> assertThat(d.allowed()).isTrue())
            .extracting(Decision::remaining).isEqualTo((long) remaining);
      }
      assertThat(keys(group.master().port(), prefix)).as("the state is on the master").isNotEmpty();
      group.awaitReplicated();
      assertThat(keys(group.replica().port(), prefix)).isEqualTo(keys(group.master().port(), prefix));

      group.master().stop();
      Decision duringOutage = acquire(store);
      assertThat(duringOutage.allowed()).isFalse();
      assertThat(duringOutage.reason()).as("the failure policy answers").isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(store.errorCount()).isPositive();

      group.promoteReplica();
      assertThat(group.currentMasterPort()).isEqualTo(group.replica().port());
      SentinelGroup.await("the store reconnects through the Sentinel", store::ping);
      assertThat(store.degraded()).isFalse();

      // the old master is dead: every decision from here on is the new master's
      Decision fourth = acquire(store);
      Decision fifth = acquire(store);
      Decision sixth = acquire(store);
      assertThat(List.of(fourth.allowed(), fifth.allowed(), sixth.allowed()))
          .containsExactly(true, true, false);
      assertThat(fifth.remaining()).isZero();
      assertThat(sixth.reason()).as("denied by the limit, on Redis").isEqualTo(Reason.RPM_LIMIT);
      assertThat(keys(group.replica().port(), prefix)).as("the state is on the new master")
          .isNotEmpty();
    }
  }

  private static Decision acquire(RedisRateLimitStore store) {
    return store.acquire(FIVE, "tenant", 1, Composition.SEQUENTIAL);
  }

  private static List<String> keys(int port, String prefix) {
    RedisClient client = RedisClient.create("redis://127.0.0.1:" + port);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      return c.sync().keys(prefix + ":{*").stream().sorted().toList();
    } finally {
      client.shutdown();
    }
  }
}
