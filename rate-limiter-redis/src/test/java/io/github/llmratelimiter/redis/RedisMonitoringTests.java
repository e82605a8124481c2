package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaSpend;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The monitoring reads on Redis ({@code top}, {@code trackedKeys}, {@code topSpenders}) send no
 * {@code SCAN} and a number of commands that does not grow with the number of keys, on a real
 * server ({@code INFO commandstats}); the structures behind them stay capped.
 */
class RedisMonitoringTests {

  /**
   * The stores' wall clock, of quota periods: noon, so that no test's daily quota crosses a day's
   * end on the real clock.
   */
  private static final InstantSource NOON = InstantSource.fixed(Instant.parse("2026-06-15T12:00:00Z"));
  private static final QuotaLimit DAILY =
      QuotaLimit.of("daily", QuotaUnit.TOKENS, 1_000_000_000L, QuotaPeriod.DAY);
  private static final Budget CHAT = new Budget("chat", new WindowLimit(100, Duration.ofMinutes(1)),
      null, null, null, List.of(DAILY), null);

  private final RedisCommands<String, String> redis = TestRedis.standaloneCommands();
  /** The key prefixes this test wrote under on the shared server. */
  private final List<String> prefixes = new ArrayList<>();

  private String fresh() {
    String prefix = TestRedis.freshPrefix();
    prefixes.add(prefix);
    return prefix;
  }

  /**
   * Deletes what the test wrote on the shared server: tens of thousands of keys, which would
   * otherwise slow every later test that scans it.
   */
  @AfterEach
  void deleteTheKeysWritten() {
    for (String prefix : prefixes) {
      ScanCursor cursor = ScanCursor.INITIAL;
      do {
        KeyScanCursor<String> page = redis.scan(cursor, ScanArgs.Builder.matches(prefix + ":*").limit(1000));
        if (!page.getKeys().isEmpty()) {
          redis.unlink(page.getKeys().toArray(String[]::new));
        }
        cursor = page;
      } while (!cursor.isFinished());
    }
  }

  /** A store on the shared server, on the ticker and at {@link #NOON}. */
  private static RedisRateLimitStore.Builder standalone(ManualTicker ticker) {
    return TestRedis.standalone(ticker).wallClock(NOON);
  }

  @Test
  void theReadsSendNoScanAndAsManyCommandsForTenThousandKeysAsForAHundred() {
    ManualTicker ticker = new ManualTicker();
    // the server counts every client's commands: no heartbeat of the store's own (a script and
    // four commands each second) may fall between the counts
    try (RedisRateLimitStore store = standalone(ticker).keyPrefix(fresh())
        .heartbeatInterval(Duration.ofHours(1)).build()) {
      fill(store, 0, 100);
      Map<String, Long> few = readCost(admin(store));
      fill(store, 100, 10_000);
      Map<String, Long> many = readCost(admin(store));
      assertThat(few.getOrDefault("scan", 0L)).isZero();
      assertThat(many.getOrDefault("scan", 0L)).isZero();
      assertThat(many).isEqualTo(few);
      // top(10): two sets read and at most 20 levels inspected; trackedKeys: one PFCOUNT;
      // topSpenders(10): one set read and at most 20 counters; quotas of the first spender: one
      // HMGET under its hashed form hashed again (none), one under the form itself
      assertThat(few).containsEntry("zrevrange", 3L).containsEntry("pfcount", 1L)
          .containsEntry("evalsha", 20L).containsEntry("hget", 20L).containsEntry("hmget", 2L);
    }
  }

  @Test
  void theStructuresStayCappedAndTheAnswersRightAmongManyKeys() {
    ManualTicker ticker = new ManualTicker();
    String prefix = fresh();
    try (RedisRateLimitStore store = standalone(ticker).keyPrefix(prefix).build()) {
      fill(store, 0, 3_000);
      for (int i = 0; i < 7; i++) {
        charge(store, "heavy", 5_000);
      }
      StoreAdministration admin = admin(store);
      assertThat(admin.top(CHAT, 2)).extracting(KeySnapshot::key)
          .first().isEqualTo(RedisRateLimitStore.hashedKey("heavy"));
      assertThat(admin.top(CHAT, 1).get(0).windowUsed()).isEqualTo(7);
      assertThat(admin.topSpenders(CHAT, DAILY, 1))
          .containsExactly(new QuotaSpend(RedisRateLimitStore.hashedKey("heavy"), 35_000));
      // a HyperLogLog: within 2% of the 3,001 keys (its standard error is 0.81%)
      assertThat((double) admin.trackedKeys(CHAT)).isCloseTo(3_001, within(60.0));
      for (String key : redis.keys(prefix + ":{~}:chat:~*")) {
        if (!key.contains(":~keys:")) {
          assertThat(redis.zcard(key)).as(key).isEqualTo(Monitoring.STANDALONE_CAP);
        }
      }
    }
  }

  @Test
  void aLevelIsRescoredWhenItsUseMovesToAnotherWholePercentOrPeriod() {
    Budget wide = new Budget("wide", new WindowLimit(1_000, Duration.ofMinutes(1)), null, null);
    ManualTicker ticker = new ManualTicker();
    String prefix = fresh();
    try (RedisRateLimitStore store = standalone(ticker).keyPrefix(prefix).build()) {
      String busiest = prefix + ":{~}:wide:~top:60000:" + Math.floorDiv(ticker.read(), 60_000_000_000L);
      for (int i = 0; i < 15; i++) {
        store.acquire(wide, "k", 1, Composition.SEQUENTIAL);
      }
      // 1 to 15 of 1,000: the first call, then the 10th (1 %) wrote the score
      assertThat(redis.zrangeWithScores(busiest, 0, -1)).singleElement()
          .satisfies(v -> assertThat(v.getScore()).isEqualTo(0.01));
      for (int i = 0; i < 10; i++) {
        store.acquire(wide, "k", 1, Composition.SEQUENTIAL);
      }
      assertThat(redis.zrangeWithScores(busiest, 0, -1)).singleElement()
          .satisfies(v -> assertThat(v.getScore()).isEqualTo(0.02)); // the 20th
      // the answer is read from the state, not from the score: exact
      assertThat(admin(store).top(wide, 1).get(0).windowUsed()).isEqualTo(25);
      ticker.advance(Duration.ofMinutes(1)); // the next period: its set gets the level at once
      store.acquire(wide, "k", 1, Composition.SEQUENTIAL);
      String next = prefix + ":{~}:wide:~top:60000:" + Math.floorDiv(ticker.read(), 60_000_000_000L);
      assertThat(redis.zrangeWithScores(next, 0, -1)).singleElement()
          .satisfies(v -> assertThat(v.getScore()).isEqualTo(0.001));
      assertThat(admin(store).trackedKeys(wide)).isEqualTo(1);
    }
  }

  @Test
  void keysLeaveTheEstimateTwoPeriodsAfterTheirLastCall() {
    ManualTicker ticker = new ManualTicker();
    try (RedisRateLimitStore store = standalone(ticker).keyPrefix(fresh()).build()) {
      fill(store, 0, 10);
      StoreAdministration admin = admin(store);
      assertThat(admin.trackedKeys(CHAT)).isEqualTo(10);
      ticker.advance(Duration.ofMinutes(1)); // the next period: the last one still counts
      charge(store, "late", 1);
      assertThat(admin.trackedKeys(CHAT)).isEqualTo(11);
      assertThat(admin.top(CHAT, 20)).hasSize(1); // the others' windows are empty again
      ticker.advance(Duration.ofMinutes(1));
      assertThat(admin.trackedKeys(CHAT)).isEqualTo(1);
      ticker.advance(Duration.ofMinutes(1));
      assertThat(admin.trackedKeys(CHAT)).isZero();
      assertThat(admin.top(CHAT, 20)).isEmpty();
    }
  }

  @Test
  void aBudgetWhoseStateNeverExpiresCountsInOnePeriodWithoutExpiry() {
    Budget oneShot = new Budget("once", null, new BucketLimit(3, 0), null);
    assertThat(Monitoring.periodMs(oneShot)).isZero();
    assertThat(Monitoring.periodMs(CHAT)).isEqualTo(60_000);
    ManualTicker ticker = new ManualTicker();
    String prefix = fresh();
    try (RedisRateLimitStore store = standalone(ticker).keyPrefix(prefix).build()) {
      store.acquire(oneShot, "a", 1, Composition.SEQUENTIAL);
      store.acquire(oneShot, "b", 1, Composition.SEQUENTIAL);
      ticker.advance(Duration.ofDays(30));
      assertThat(admin(store).trackedKeys(oneShot)).isEqualTo(2);
      assertThat(admin(store).top(oneShot, 5)).hasSize(2);
      for (String key : redis.keys(prefix + ":{~}:once:~*")) {
        assertThat(redis.pttl(key)).as(key + " never expires").isEqualTo(-1);
      }
    }
  }

  @Test
  void aSettlementRescoresItsCounterInTheSpendersSet() {
    ManualTicker ticker = new ManualTicker();
    String prefix = fresh();
    try (RedisRateLimitStore store = standalone(ticker).keyPrefix(prefix).build()) {
      Reservation big = store.reserve(List.of(CHAT), List.of("a"), 1,
          Consumption.ofCall(5_000, 0), Composition.SEQUENTIAL);
      charge(store, "b", 100);
      RedisKeys layout = new RedisKeys(prefix, true);
      long start = QuotaFrame.period(DAILY, NOON.millis())[0];
      String set = new Monitoring(layout, false).spenders(0, "chat", DAILY.stateId(), start);
      String counter = RedisKeys.quota(layout.state("a", "chat", "a"), DAILY.stateId(), start);
      assertThat(redis.zscore(set, counter)).isEqualTo(5_000.0);
      store.reconcile(big, Consumption.ofCall(10, 0));
      assertThat(redis.zscore(set, counter)).isEqualTo(10.0);
      assertThat(admin(store).topSpenders(CHAT, DAILY, 1))
          .containsExactly(new QuotaSpend(RedisRateLimitStore.hashedKey("b"), 100));
    }
  }

  @Test
  void everyClusterSlotHasATagOfItsOwn() {
    Monitoring cluster = new Monitoring(new RedisKeys("p", true), true);
    for (int slot = 0; slot < Monitoring.CLUSTER_BUCKETS; slot += 1_001) {
      String key = cluster.busiest(slot, "chat", 60_000, 7);
      assertThat(cluster.bucket(key)).isEqualTo(slot);
      assertThat(cluster.bucket(cluster.spenders(slot, "chat", "daily", 0))).isEqualTo(slot);
    }
    assertThat(new Monitoring(new RedisKeys("p", true), false).buckets()).isEqualTo(1);
  }

  @Test
  void onAClusterTheReadsSendNoScanToAnyMaster() {
    ManualTicker ticker = new ManualTicker();
    try (RedisRateLimitStore store = TestRedis.cluster(ticker).wallClock(NOON).build()) {
      fill(store, 0, 200);
      Map<String, Long> before = clusterCalls();
      StoreAdministration admin = admin(store);
      assertThat(admin.top(CHAT, 5)).hasSize(5);
      assertThat(admin.trackedKeys(CHAT)).isEqualTo(200);
      assertThat(admin.topSpenders(CHAT, DAILY, 5)).hasSize(5);
      Map<String, Long> after = clusterCalls();
      assertThat(after.getOrDefault("scan", 0L)).isEqualTo(before.getOrDefault("scan", 0L));
      // one PFCOUNT per slot, one ZREVRANGE per slot and set
      assertThat(after.get("pfcount") - before.getOrDefault("pfcount", 0L))
          .isEqualTo(Monitoring.CLUSTER_BUCKETS);
      assertThat(after.get("zrevrange") - before.getOrDefault("zrevrange", 0L))
          .isEqualTo(3L * Monitoring.CLUSTER_BUCKETS);
    }
  }

  /** Keys {@code from} to {@code to} (excluded) each make one call charging their number. */
  private static void fill(RateLimitStore store, int from, int to) {
    List<CompletableFuture<?>> calls = new ArrayList<>();
    for (int i = from; i < to; i++) {
      calls.add(store.reserveAsync(List.of(CHAT), List.of("key-" + i), 1,
          Consumption.ofCall(1 + i % 1000, 0), Composition.SEQUENTIAL).toCompletableFuture());
      if (calls.size() == 500) {
        calls.forEach(CompletableFuture::join);
        calls.clear();
      }
    }
    calls.forEach(CompletableFuture::join);
  }

  private static void charge(RateLimitStore store, String key, long tokens) {
    store.reserve(List.of(CHAT), List.of(key), 1, Consumption.ofCall(tokens, 0),
        Composition.SEQUENTIAL);
  }

  /** The commands (with those the scripts call) that top(10), trackedKeys and topSpenders(10) send. */
  private Map<String, Long> readCost(StoreAdministration admin) {
    Map<String, Long> before = calls(redis);
    assertThat(admin.top(CHAT, 10)).hasSize(10);
    assertThat(admin.trackedKeys(CHAT)).isPositive();
    List<QuotaSpend> spenders = admin.topSpenders(CHAT, DAILY, 10);
    assertThat(spenders).hasSize(10);
    // what the endpoint asks of the first spender, by the hashed form it is listed under
    assertThat(admin.quotas(CHAT, spenders.get(0).key()).get(0).used())
        .isEqualTo(spenders.get(0).used());
    Map<String, Long> after = calls(redis);
    Map<String, Long> sent = new HashMap<>();
    after.forEach((name, count) -> {
      long d = count - before.getOrDefault(name, 0L);
      if (d > 0 && !name.equals("info")) {
        sent.put(name, d);
      }
    });
    return sent;
  }

  private static Map<String, Long> clusterCalls() {
    Map<String, Long> all = new HashMap<>();
    for (RedisServer node : TestRedis.clusterNodes()) {
      RedisClient client = RedisClient.create(node.uri());
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        calls(c.sync()).forEach((name, count) -> all.merge(name, count, Long::sum));
      } finally {
        client.shutdown();
      }
    }
    return all;
  }

  /** The calls of each command since the server started, from {@code INFO commandstats}. */
  private static Map<String, Long> calls(RedisCommands<String, String> redis) {
    return TestRedis.commandCalls(redis);
  }

  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
