package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Slot leases on a redis-server of this class's own, with time from a ticker: a release that a
 * Redis hiccup kept from Redis frees its slot within one slot lease, and one renewal covers every
 * slot an instance holds.
 */
class SlotLeaseTests {

  private static final Duration SLOT_LEASE = Duration.ofSeconds(5);

  @RegisterExtension
  static final RunningRedis REDIS = new RunningRedis();

  private static final Budget SLOTS =
      new Budget("par", null, null, null, ConcurrencyLimit.of(1));

  private static RedisRateLimitStore.Builder instance(String prefix, ManualTicker ticker) {
    return RedisRateLimitStore.builder(REDIS.server().uri())
        .keyPrefix(prefix)
        .failurePolicy(FailurePolicy.FAIL_CLOSED)
        .heartbeatInterval(Duration.ofHours(1))
        .ticker(ticker);
  }

  private static Reservation reserve(RedisRateLimitStore store, String key) {
    return store.reserve(List.of(SLOTS), List.of(key), 1, 0, Composition.SEQUENTIAL);
  }

  @Test
  void aReleaseLostToARedisHiccupFreesTheSlotWithinOneSlotLease() {
    String prefix = TestRedis.freshPrefix();
    ManualTicker ticker = new ManualTicker();
    // one failed call opens the holder's circuit breaker, which stays open on the ticker's time
    try (RedisRateLimitStore holder = instance(prefix, ticker).slotLease(SLOT_LEASE)
            .commandTimeout(Duration.ofMillis(300)).circuitBreaker(50, 2, 1, 1)
            .retryInterval(Duration.ofHours(1)).build();
        RedisRateLimitStore survivor = instance(prefix, ticker)
            .commandTimeout(TestRedis.TEST_TIMEOUT).build()) {
      Reservation held = reserve(holder, "t");
      assertThat(held.decision().allowed()).isTrue();
      ticker.advanceMillis(3_000);
      ((GuardedRedisStore) holder).renewSlots().join(); // the slot counts until 8 s

      REDIS.server().freeze(); // the hiccup: a call times out, the breaker opens
      try {
        assertThat(reserve(holder, "other").decision().reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
        assertThat(holder.degraded()).isTrue();
        holder.release(held); // never reaches Redis: lost
      } finally {
        REDIS.server().thaw();
      }
      assertThat(((GuardedRedisStore) holder).renewedCalls()).as("no longer renewed").isZero();
      Reservation denied = reserve(survivor, "t");
      assertThat(denied.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
      assertThat(denied.decision().retryAfterMs()).as("an upper bound: the lease timeout")
          .isEqualTo(ConcurrencyLimit.DEFAULT_LEASE_TIMEOUT.toMillis() - 3_000);

      ticker.advanceMillis(SLOT_LEASE.toMillis() - 1);
      assertThat(reserve(survivor, "t").decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
      ticker.advanceMillis(1);
      assertThat(holder.ping()).isTrue(); // the holder recovers: its renewals find nothing to renew
      ((GuardedRedisStore) holder).renewSlots().join();
      assertThat(inFlight(survivor, "t")).isZero();
      assertThat(reserve(survivor, "t").decision().allowed()).isTrue();
    }
  }

  @Test
  void oneScriptRenewsEverySlotOfAnInstanceOnAStandaloneServer() {
    String prefix = TestRedis.freshPrefix();
    ManualTicker ticker = new ManualTicker();
    RedisClient client = RedisClient.create(REDIS.server().uri());
    // a slot lease and a heartbeat of an hour: the timer renews nothing and sends no heartbeat
    // script between the counts
    try (RedisRateLimitStore holder = instance(prefix, ticker).slotLease(Duration.ofHours(1))
            .heartbeatInterval(Duration.ofHours(1))
            .commandTimeout(TestRedis.TEST_TIMEOUT).build();
        StatefulRedisConnection<String, String> redis = client.connect()) {
      Budget pair = new Budget("pair", null, null, null, ConcurrencyLimit.of(2));
      for (int i = 0; i < 20; i++) {
        assertThat(holder.reserve(List.of(SLOTS, pair), List.of("k" + i, "k" + i + "/m"), 1, 0,
            Composition.SEQUENTIAL).decision().allowed()).isTrue();
      }
      assertThat(((GuardedRedisStore) holder).renewedCalls()).isEqualTo(20);
      redis.sync().configResetstat();
      ((GuardedRedisStore) holder).renewSlots().join();
      assertThat(redis.sync().info("commandstats"))
          .as("40 slots on 40 keys, one EVALSHA").contains("cmdstat_evalsha:calls=1,")
          .doesNotContain("cmdstat_eval:");
    } finally {
      client.shutdown();
    }
  }

  private static long inFlight(RedisRateLimitStore store, String key) {
    return store.administration().orElseThrow().inspect(SLOTS, key)
        .map(KeySnapshot::inFlight).orElse(0L);
  }
}
