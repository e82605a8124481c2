package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The keys of an upstream's order in Redis: under the upstream's own hash tag (the slot of its
 * state), tenants only as hashes even with limiter keys in clear, every key with an expiry, and
 * the counters of tenants idle for a minute forgotten by the admissions themselves.
 */
class RedisUpstreamOrderKeysTests {

  private static final Budget TENANT = new Budget("tenant", WindowLimit.perMinute(10_000), null);
  private static final Upstream OPENAI =
      new Upstream("openai", WindowLimit.perMinute(10_000), null, null);
  private static final String SECRET = "sk-live-0123456789";

  private final ManualTicker ticker = new ManualTicker();
  private final RedisCommands<String, String> redis = TestRedis.standaloneCommands();

  private static boolean admit(RedisRateLimitStore store, UpstreamTurn turn) {
    return store.reserve(List.of(TENANT), List.of(turn.tenant()), 1,
        Consumption.ofCall(turn.estimate(), 0), Composition.SEQUENTIAL, OPENAI, turn)
        .decision().allowed();
  }

  /** Every key, field, member and element of the order's keys. */
  private List<String> contents(List<String> keys) {
    List<String> all = new ArrayList<>(keys);
    for (String k : keys) {
      switch (redis.type(k)) {
        case "hash" -> redis.hgetall(k).forEach((f, v) -> {
          all.add(f);
          all.add(v);
        });
        case "zset" -> all.addAll(redis.zrange(k, 0, -1));
        case "list" -> all.addAll(redis.lrange(k, 0, -1));
        default -> all.add(redis.get(k));
      }
    }
    return all;
  }

  @Test
  void theOrdersKeysLieInTheUpstreamsSlotHoldTenantsAsHashesAndExpire() throws Exception {
    String prefix = TestRedis.freshPrefix();
    try (RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix)
        .hashKeys(false).build()) {
      UpstreamOrder order = store.upstreamOrder();
      UpstreamTurn secret = new UpstreamTurn(SECRET, 2, 1, 300, null);
      assertThat(admit(store, secret)).isTrue();
      String first = order.enter(OPENAI, secret, Duration.ofMinutes(2)).toCompletableFuture()
          .get();
      order.enter(OPENAI, new UpstreamTurn("other", 1, 0, 100, null), Duration.ofMinutes(2))
          .toCompletableFuture().get();
      assertThat(order.first(OPENAI).toCompletableFuture().get()).isPresent();
      String state = prefix + ":{upstream:openai}:s";
      List<String> keys = redis.keys(prefix + ":{upstream:openai}:o*");
      assertThat(keys).hasSizeGreaterThanOrEqualTo(8)
          .allSatisfy(k -> assertThat(SlotHash.getSlot(k)).isEqualTo(SlotHash.getSlot(state)));
      assertThat(keys).allSatisfy(k -> assertThat(redis.pttl(k)).as(k).isPositive());
      assertThat(contents(keys)).as("the tenant never in clear")
          .noneMatch(s -> s != null && s.contains(SECRET))
          .anyMatch(s -> s != null && s.contains(first));
    }
  }

  /** Serves a call of {@code turn} that waited in the order (alone). */
  private static boolean admitAfterWaiting(RedisRateLimitStore store, UpstreamTurn turn) {
    String id = store.upstreamOrder().enter(OPENAI, turn, Duration.ofMinutes(2))
        .toCompletableFuture().join();
    return admit(store, turn.waiting(id));
  }

  @Test
  void tenantsIdleForAMinuteAreForgottenByTheOrdersReadsAndCallsAtOnceKeepNoCounter() {
    String prefix = TestRedis.freshPrefix();
    try (RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix).build()) {
      String counters = prefix + ":{upstream:openai}:o:c";
      for (int i = 0; i < 10; i++) {
        assertThat(admit(store, new UpstreamTurn("once" + i, 1, 0, 10, null))).isTrue();
      }
      assertThat(redis.hlen(counters)).as("calls at once move only the last-left counter")
          .isZero();
      assertThat(redis.hget(prefix + ":{upstream:openai}:o:l", "0")).isEqualTo("100");
      for (int i = 0; i < 40; i++) {
        assertThat(admitAfterWaiting(store, new UpstreamTurn("t" + i, 1, 0, 10, null))).isTrue();
      }
      assertThat(redis.hlen(counters)).isEqualTo(40);
      ticker.advance(Duration.ofSeconds(59));
      assertThat(admitAfterWaiting(store, new UpstreamTurn("busy", 1, 0, 10, null))).isTrue();
      assertThat(redis.hlen(counters)).as("none idle for a minute yet").isEqualTo(41);
      ticker.advance(Duration.ofSeconds(1));
      assertThat(admitAfterWaiting(store, new UpstreamTurn("busy", 1, 0, 10, null))).isTrue();
      assertThat(redis.hlen(counters))
          .as("eight forgotten per read of the order: two in the enter, one in the admission")
          .isEqualTo(41 - 24);
      for (int i = 0; i < 2; i++) {
        assertThat(admitAfterWaiting(store, new UpstreamTurn("busy", 1, 0, 10, null))).isTrue();
      }
      assertThat(redis.hlen(counters)).isOne();
      assertThat(redis.zcard(prefix + ":{upstream:openai}:o:a")).isOne();
    }
  }
}
