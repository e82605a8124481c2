package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** What only the Redis store has: its keys, their expiry, server time, scripts, round trips. */
class RedisStoreBehaviourTests {

  private static final Budget ORG = Budget.of("org",
      new WindowLimit(100, Duration.ofSeconds(10)), new BucketLimit(10, 2));
  private static final Budget KEY = new Budget("key", new WindowLimit(5, Duration.ofSeconds(3)), null);
  private static final Budget MODEL = new Budget("model", null, new BucketLimit(4, 0));
  private static final Budget BUCKET_ONLY = new Budget("bucket-only", null, new BucketLimit(10, 2));
  private static final Budget SHORT_WINDOW = Budget.of("short-window",
      new WindowLimit(5, Duration.ofSeconds(1)), new BucketLimit(10, 1));

  private final RedisCommands<String, String> redis = TestRedis.standaloneCommands();

  /**
   * A store on the shared server; its heartbeat (a script and four commands) runs at start only,
   * so that none falls between the server's command counts a test takes. Its decisions read the
   * server's time; its monitoring periods (a minute at least) and quota periods are those of one
   * fixed instant, so that a test crossing a minute's end on the wall clock counts as many new
   * members as one that does not.
   */
  private static RedisRateLimitStore serverTimeStore(String prefix) {
    return RedisRateLimitStore.builder(TestRedis.standaloneClient(), TestRedis.standaloneUri())
        .keyPrefix(prefix).commandTimeout(TestRedis.TEST_TIMEOUT).hashKeys(false)
        .heartbeatInterval(Duration.ofHours(1)).wallClock(InstantSource.fixed(Instant.now()))
        .build();
  }

  @Test
  void aHierarchysKeysShareTheRootsHashTagAndSlot() {
    String prefix = TestRedis.freshPrefix();
    try (RedisRateLimitStore store = serverTimeStore(prefix)) {
      store.acquire(List.of(ORG, KEY, MODEL), List.of("acme", "k1", "k1/gpt"), 1,
          Composition.SEQUENTIAL);
      List<String> keys = stateKeys(prefix);
      assertThat(keys).containsExactlyInAnyOrder(prefix + ":{acme}:org:acme:s",
          prefix + ":{acme}:key:k1:s", prefix + ":{acme}:model:k1/gpt:s");
      assertThat(keys.stream().map(SlotHash::getSlot).distinct()).hasSize(1);
    }
  }

  @Test
  void aStoreOnTheApplicationsResourcesShutsDownOnlyItsOwnCopyOfThem() throws Exception {
    ClientResources shared = DefaultClientResources.create();
    try {
      RedisRateLimitStore store = RedisRateLimitStore.builder(TestRedis.standaloneUri())
          .keyPrefix(TestRedis.freshPrefix()).commandTimeout(TestRedis.TEST_TIMEOUT)
          .clientResources(shared).build();
      assertThat(store.acquire(List.of(KEY), List.of("k1"), 1, Composition.SEQUENTIAL).allowed()).isTrue();
      store.close();
      assertThat(shared.eventExecutorGroup().isShuttingDown()).as("the application's executors").isFalse();
      RedisClient other = RedisClient.create(shared, TestRedis.standaloneUri());
      try (var connection = other.connect()) {
        assertThat(connection.sync().ping()).as("a client on the application's resources").isEqualTo("PONG");
      } finally {
        other.shutdown();
      }
    } finally {
      shared.shutdown().get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void reservationIdsNeverRepeatAfterTheirCounterExpired() {
    String prefix = TestRedis.freshPrefix();
    Budget slots = new Budget("slots", null, null, null, ConcurrencyLimit.of(10));
    Budget tokens = new Budget("tokens", null, null, ModelTokenLimit.perMinute(1000));
    ManualTicker ticker = new ManualTicker(); // the scripts' time: a millisecond passes between restarts
    try (RedisRateLimitStore store = RedisRateLimitStore.builder(TestRedis.standaloneUri())
        .keyPrefix(prefix).commandTimeout(TestRedis.TEST_TIMEOUT).ticker(ticker).build()) {
      Reservation first = store.reserve(List.of(slots), List.of("acme"), 1, 0, Composition.SEQUENTIAL);
      Reservation next = store.reserve(List.of(slots), List.of("acme"), 1, 0, Composition.SEQUENTIAL);
      assertThat(next.id()).isEqualTo(first.id() + 1);
      String counter = prefix + ":{" + RedisRateLimitStore.hashedKey("acme") + "}:seq";
      assertThat(redis.pttl(counter)).as("the counter expires").isPositive();
      redis.del(counter); // as if it had expired while entries that hold its ids live on
      ticker.advanceMillis(1);
      Reservation second = store.reserve(List.of(slots), List.of("acme"), 1, 0, Composition.SEQUENTIAL);
      assertThat(second.id()).as("a new id, past those the first reservations still hold")
          .isGreaterThan(next.id());
      redis.del(counter);
      ticker.advanceMillis(1);
      store.chargeModelTokens(List.of(tokens), List.of("acme"), 5);
      assertThat(Long.parseLong(redis.get(counter))).as("restarted past every id given")
          .isGreaterThan(second.id() - LuaRateLimitStore.RESERVATION_ID_BASE);
      store.release(first);
      store.release(next);
      store.release(second);
    }
  }

  @Test
  void resetAllDeletesOnlyItsOwnPrefixsStateAndKeepsTheLiveInstances() {
    String prefix = TestRedis.freshPrefix();
    String neighbour = TestRedis.freshPrefix();
    try (RedisRateLimitStore store = serverTimeStore(prefix);
        RedisRateLimitStore other = serverTimeStore(neighbour)) {
      store.acquire(List.of(ORG, KEY, MODEL), List.of("acme", "k1", "k1/gpt"), 1,
          Composition.SEQUENTIAL);
      store.planAssignments().orElseThrow().assignPlan("k1", "pro");
      other.acquire(KEY, "k1", 1, Composition.SEQUENTIAL);
      redis.zadd(prefix + ":instances", 1, "instance-a");
      assertThat(stateKeys(prefix)).hasSize(4);

      admin(store).resetAll();

      assertThat(redis.keys(prefix + ":*")).containsExactly(prefix + ":instances");
      assertThat(stateKeys(neighbour)).containsExactly(neighbour + ":{k1}:key:k1:s");
      assertThat(store.planAssignments().orElseThrow().assignedPlan("k1")).isEmpty();
    }
  }

  @Test
  void everyKeyExpiresOnceItsStateWouldBeFreshAgain() {
    String prefix = TestRedis.freshPrefix();
    try (RedisRateLimitStore store = serverTimeStore(prefix)) {
      store.acquire(List.of(ORG, KEY, MODEL), List.of("acme", "k1", "m"), 3, Composition.SEQUENTIAL);
      // window of 10 s: fresh 10 s after the admission (the bucket, 3 tokens short at 2 per
      // second, is full in 1.5 s)
      assertThat(redis.pttl(prefix + ":{acme}:org:acme:s")).isBetween(9_000L, 10_001L);
      assertThat(redis.pttl(prefix + ":{acme}:key:k1:s")).isBetween(2_000L, 3_001L);
      // a bucket that never refills is a one-shot budget: it must not expire
      assertThat(redis.pttl(prefix + ":{acme}:model:m:s")).isEqualTo(-1L);
      // 3 tokens short at 2 per second: full in 1.5 s
      store.acquire(BUCKET_ONLY, "b", 3, Composition.SEQUENTIAL);
      assertThat(redis.pttl(prefix + ":{b}:bucket-only:b:s")).isBetween(500L, 1_501L);
      // a bucket full later than its window is empty: fresh when the bucket is full, in 5 s
      store.acquire(SHORT_WINDOW, "s", 5, Composition.SEQUENTIAL);
      assertThat(redis.pttl(prefix + ":{s}:short-window:s:s")).isBetween(4_000L, 5_001L);
    }
  }

  @Test
  void aFreshStateIsDeletedAtOnce() {
    ManualTicker ticker = new ManualTicker();
    String prefix = TestRedis.freshPrefix();
    try (RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix).hashKeys(false)
        .build()) {
      store.acquire(BUCKET_ONLY, "b", 3, Composition.SEQUENTIAL);
      assertThat(redis.exists(prefix + ":{b}:bucket-only:b:s")).isEqualTo(1);
      ticker.advance(Duration.ofSeconds(2)); // the bucket is full again
      assertThat(store.acquire(BUCKET_ONLY, "b", 0.5, Composition.SEQUENTIAL).allowed()).isTrue();
      ticker.advance(Duration.ofSeconds(1));
      assertThat(admin(store).inspect(BUCKET_ONLY, "b")).isEmpty();
      assertThat(redis.exists(prefix + ":{b}:bucket-only:b:s")).isZero();
    }
  }

  @Test
  void serverTimeDrivesRetriesInMilliseconds() {
    String prefix = TestRedis.freshPrefix();
    Budget perMinute = new Budget("pm", WindowLimit.perMinute(1), null);
    try (RedisRateLimitStore store = serverTimeStore(prefix)) {
      assertThat(store.acquire(perMinute, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      Decision d = store.acquire(perMinute, "t", 1, Composition.SEQUENTIAL);
      assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(d.retryAfterMs()).isBetween(50_000L, 60_000L).isEqualTo(d.resetAfterMs());
    }
  }

  @Test
  void equalTimestampsAreDistinctAdmissions() {
    ManualTicker ticker = new ManualTicker(); // never advanced: every call at the same instant
    String prefix = TestRedis.freshPrefix();
    Budget b = new Budget("w", new WindowLimit(5, Duration.ofSeconds(1)), null);
    try (RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix).build()) {
      for (int i = 0; i < 7; i++) {
        store.acquire(b, "t", 1, Composition.SEQUENTIAL);
      }
      String t = RedisRateLimitStore.hashedKey("t");
      assertThat(StoredState.read(prefix + ":{" + t + "}:w:" + t + ":s").admissions())
          .containsExactly(ticker.read(), ticker.read(), ticker.read(),
              ticker.read(), ticker.read());
    }
  }

  @Test
  void oneScriptCallPerDecisionWhateverTheLevels() {
    String prefix = TestRedis.freshPrefix();
    try (RedisRateLimitStore store = serverTimeStore(prefix)) {
      store.acquire(ORG, "warm-up", 1, Composition.SEQUENTIAL);
      redis.configResetstat();
      for (int i = 0; i < 10; i++) {
        store.acquire(List.of(ORG, KEY, MODEL), List.of("acme", "k" + i, "m" + i), 1,
            i % 2 == 0 ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT);
      }
      Map<String, Long> calls = commandCalls();
      assertThat(calls).containsEntry("evalsha", 10L);
      // every call allowed at every level: the script read the time once, and each level's state
      // (small: read whole by one GETRANGE of its first 4 KB, its length never asked) and
      // wrote it with one SET
      assertThat(calls).containsEntry("time", 10L).containsEntry("getrange", 30L)
          .containsEntry("set", 30L).doesNotContainKeys("strlen", "get");
      // and kept the monitoring structures: per level one ZADD (its use); a level new in its
      // period's set (acme's once, k<i>'s and m<i>'s each time) trims the set to the cap and adds
      // its key to the estimate (PFADD); a new member or key sets its expiry
      assertThat(calls).containsEntry("zadd", 30L).containsEntry("zremrangebyrank", 21L)
          .containsEntry("pfadd", 21L);
      // everything else was called by this test
      assertThat(calls.keySet()).isSubsetOf("evalsha", "time", "getrange", "set", "zadd",
          "pfadd", "zremrangebyrank", "pexpire", "info", "config");
    }
  }

  @Test
  void slotsAreLeasesInTheLevelsHashTagAndOneScriptCallGivesThemBack() {
    String prefix = TestRedis.freshPrefix();
    Budget slots = new Budget("par", null, null, null,
        new ConcurrencyLimit(3, Duration.ofSeconds(30)));
    // a slot lease of 20 s: its renewal (every third of it) falls in no count below
    try (RedisRateLimitStore store = RedisRateLimitStore.builder(TestRedis.standaloneClient(),
            TestRedis.standaloneUri()).keyPrefix(prefix).commandTimeout(TestRedis.TEST_TIMEOUT)
        .hashKeys(false).heartbeatInterval(Duration.ofHours(1)).slotLease(Duration.ofSeconds(20))
        .build()) {
      List<Budget> levels = List.of(ORG, slots);
      Reservation r = store.reserve(levels, List.of("acme", "k1"), 1, 0, Composition.SEQUENTIAL);
      assertThat(r.holdsSlots()).isTrue();
      String leases = prefix + ":{acme}:par:k1:c";
      List<String> keys = stateKeys(prefix);
      assertThat(keys).containsExactlyInAnyOrder(prefix + ":{acme}:org:acme:s", leases,
          prefix + ":{acme}:seq");
      assertThat(keys.stream().map(SlotHash::getSlot).distinct()).hasSize(1);
      // one slot: the reservation's id and its lease's end (the cap), scored by when it expires
      // unless renewed: a slot lease (20 s here) from now, before its cap
      List<ScoredValue<String>> held = redis.zrangeWithScores(leases, 0, -1);
      assertThat(held).hasSize(1);
      String[] member = held.get(0).getValue().split(" ");
      assertThat(member).hasSize(2);
      assertThat(Long.parseLong(member[0])).isEqualTo(r.id());
      List<String> time = redis.time();
      double nowMicros = Long.parseLong(time.get(0)) * 1e6 + Long.parseLong(time.get(1));
      assertThat(Double.parseDouble(member[1]) - nowMicros).isBetween(25e6, 30e6);
      assertThat(held.get(0).getScore() - nowMicros).isBetween(15e6, 20e6);
      assertThat(redis.pttl(leases)).as("the key expires with its last slot")
          .isBetween(15_000L, 20_001L);
      redis.configResetstat();
      store.release(r);
      store.release(r);
      Map<String, Long> calls = commandCalls();
      assertThat(calls).containsEntry("evalsha", 2L).containsEntry("zrem", 1L)
          .containsEntry("zrange", 2L);
      assertThat(calls.keySet()).isSubsetOf("evalsha", "zrem", "zrange", "info", "config");
      assertThat(redis.exists(leases)).as("an empty set of leases is no key").isZero();
    }
  }

  @Test
  void modelTokensChargedAfterTheFactAreOneScriptCallInTheKeysHashTagAndNoRequestSlot() {
    String prefix = TestRedis.freshPrefix();
    Budget perKey = new Budget("tok", WindowLimit.perMinute(10), null, ModelTokenLimit.perMinute(1000));
    Budget perModel = new Budget("tok-model", WindowLimit.perMinute(5), null,
        ModelTokenLimit.perMinute(500));
    try (RedisRateLimitStore store = serverTimeStore(prefix)) {
      List<Budget> levels = List.of(ORG, perKey, perModel);
      List<String> keys = List.of("acme", "k1", "k1|gpt");
      store.chargeModelTokens(levels, keys, 1); // loads the script once
      redis.configResetstat();
      for (int i = 0; i < 5; i++) {
        store.chargeModelTokens(levels, keys, 100);
      }
      Map<String, Long> calls = commandCalls();
      assertThat(calls).containsEntry("evalsha", 5L);
      // one GETRANGE of each model-token window (2 levels, 5 calls; small, so read whole), written
      // in place (its sum rewritten, the entry appended, its expiry moved): no window or bucket
      // state read or written
      assertThat(calls).containsEntry("getrange", 10L).containsEntry("setrange", 10L)
          .containsEntry("append", 10L).containsEntry("pexpire", 10L)
          .doesNotContainKeys("set", "get", "strlen");
      List<String> written = stateKeys(prefix);
      assertThat(written.stream().map(SlotHash::getSlot).distinct()).as("one hash slot").hasSize(1);
      assertThat(written).noneMatch(k -> k.endsWith(":s")).anyMatch(k -> k.endsWith(":seq"));
      assertThat(written).filteredOn(k -> !k.endsWith(":seq"))
          .allSatisfy(k -> assertThat(redis.pttl(k)).as(k + " expires").isBetween(1L, 61_000L));
      assertThat(admin(store).inspect(perKey, "k1").orElseThrow().modelTokensUsed()).isEqualTo(501);
      assertThat(admin(store).inspect(perModel, "k1|gpt").orElseThrow().modelTokensUsed()).isEqualTo(501);
      assertThat(admin(store).inspect(ORG, "acme")).as("a level without model tokens").isEmpty();
    }
  }

  @Test
  void aPlanAssignedOnOneInstanceIsReadByAnotherAndKeptUnderTheKeysHash() {
    String prefix = TestRedis.freshPrefix();
    try (RedisRateLimitStore one = TestRedis.gatewayInstance(prefix);
        RedisRateLimitStore two = TestRedis.gatewayInstance(prefix)) {
      one.planAssignments().orElseThrow().assignPlan("sk-secret-1", "pro");
      assertThat(two.planAssignments().orElseThrow().assignedPlan("sk-secret-1")).contains("pro");
      assertThat(two.planAssignments().orElseThrow()
          .assignedPlanAsync("sk-secret-1").toCompletableFuture().join()).contains("pro");
      assertThat(two.planAssignments().orElseThrow()
          .assignedPlanAsync("sk-other-1").toCompletableFuture().join()).isEmpty();
      String hashed = RedisRateLimitStore.hashedKey("sk-secret-1");
      assertThat(redis.keys(prefix + ":*")).contains(prefix + ":{" + hashed + "}:plan")
          .noneMatch(k -> k.contains("sk-secret-1"));
      two.planAssignments().orElseThrow().assignPlan("sk-secret-1", null);
      assertThat(one.planAssignments().orElseThrow().assignedPlan("sk-secret-1")).isEmpty();
    }
  }

  @Test
  void scriptFlushNeverReachesACaller() {
    String prefix = TestRedis.freshPrefix();
    Budget b = new Budget("flush", new WindowLimit(3, Duration.ofMinutes(1)), null);
    try (RedisRateLimitStore store = serverTimeStore(prefix)) {
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).remaining()).isEqualTo(2);
      redis.scriptFlush();
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).remaining()).isEqualTo(1);
      redis.scriptFlush();
      assertThat(admin(store).inspect(b, "t").orElseThrow().windowUsed()).isEqualTo(2);
      assertThat(store.errorCount()).isZero();
      assertThat(store.degraded()).isFalse();
    }
  }

  @Test
  void storesWithDifferentPrefixesDoNotShare() {
    Budget b = new Budget("p", new WindowLimit(1, Duration.ofMinutes(1)), null);
    try (RedisRateLimitStore one = serverTimeStore(TestRedis.freshPrefix());
        RedisRateLimitStore two = serverTimeStore(TestRedis.freshPrefix())) {
      assertThat(one.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      assertThat(two.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      assertThat(admin(one).trackedKeys(b)).isEqualTo(1);
    }
  }

  @Test
  void aBudgetNameMustKeepItsDefaultsWithinAStoreAndTakesItsVariants() {
    try (RedisRateLimitStore store = serverTimeStore(TestRedis.freshPrefix())) {
      Budget free = new Budget("b", WindowLimit.perMinute(1), null);
      store.acquire(free, "t", 1, Composition.SEQUENTIAL);
      assertThatIllegalArgumentException().isThrownBy(() -> store.acquire(
              new Budget("b", WindowLimit.perMinute(2), null), "t", 1, Composition.SEQUENTIAL))
          .withMessageContaining("budget 'b' is already used with other defaults");
      Budget pro = free.variant(WindowLimit.perMinute(2), null, null, null);
      assertThat(store.acquire(pro, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      assertThat(store.acquire(free, "t", 1, Composition.SEQUENTIAL).reason())
          .isEqualTo(Reason.RPM_LIMIT);
    }
  }

  @Test
  void keysWithSpecialCharactersAreTrackedAndListedInClear() {
    Budget b = new Budget("odd", new WindowLimit(10, Duration.ofMinutes(1)), null);
    Set<String> odd = Set.of("a}b", "{x}", "c:d", "50%", "*", "?[]\\");
    try (RedisRateLimitStore store = serverTimeStore(TestRedis.freshPrefix())) {
      odd.forEach(k -> store.acquire(b, k, 1, Composition.SEQUENTIAL));
      store.acquire(b, "*", 1, Composition.SEQUENTIAL);
      assertThat(admin(store).trackedKeys(b)).isEqualTo(odd.size());
      assertThat(admin(store).top(b, 10).stream().map(s -> s.key()).collect(Collectors.toSet()))
          .isEqualTo(odd);
      assertThat(admin(store).inspect(b, "*").orElseThrow().windowUsed()).isEqualTo(2);
      assertThat(admin(store).reset(b, "*")).isTrue();
      assertThat(admin(store).top(b, 10)).hasSize(odd.size() - 1);
      // an estimate of the keys called in the period: a reset does not lower it
      assertThat(admin(store).trackedKeys(b)).isEqualTo(odd.size());
    }
  }

  @Test
  void aHashSecretKeysTheHashesAndStoresSharingItShareBudgets() throws Exception {
    String prefix = TestRedis.freshPrefix();
    String apiKey = "sk-live-guessable";
    byte[] secret = "a-secret-of-24-bytes-xxx".getBytes(StandardCharsets.UTF_8);
    RedisRateLimitStore.Builder keyed = RedisRateLimitStore.builder(TestRedis.standaloneClient(),
        TestRedis.standaloneUri()).keyPrefix(prefix).commandTimeout(TestRedis.TEST_TIMEOUT)
        .hashSecret(secret);
    try (RedisRateLimitStore one = keyed.build(); RedisRateLimitStore two = keyed.build();
        RedisRateLimitStore other = RedisRateLimitStore.builder(TestRedis.standaloneClient(),
            TestRedis.standaloneUri()).keyPrefix(prefix).commandTimeout(TestRedis.TEST_TIMEOUT)
            .hashSecret("another-secret-of-24-byte".getBytes(StandardCharsets.UTF_8)).build()) {
      for (int i = 0; i < 3; i++) {
        one.acquire(KEY, apiKey, 1, Composition.SEQUENTIAL);
      }
      javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
      mac.init(new javax.crypto.spec.SecretKeySpec(secret, "HmacSHA256"));
      String keyedHash = "#" + java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(
          java.util.Arrays.copyOf(mac.doFinal(apiKey.getBytes(StandardCharsets.UTF_8)), 16));
      assertThat(stateKeys(prefix))
          .containsExactly(prefix + ":{" + keyedHash + "}:key:" + keyedHash + ":s");
      assertThat(keyedHash).isNotEqualTo(RedisRateLimitStore.hashedKey(apiKey));
      assertThat(admin(one).top(KEY, 10)).extracting(KeySnapshot::key).containsExactly(keyedHash);
      assertThat(admin(two).inspect(KEY, apiKey).orElseThrow().windowUsed()).isEqualTo(3);
      assertThat(admin(other).inspect(KEY, apiKey)).isEmpty();
    }
    assertThatIllegalArgumentException().isThrownBy(() -> RedisRateLimitStore.builder("redis://x")
        .hashSecret(new byte[15])).withMessageContaining("secret").withMessageContaining("15");
  }

  @Test
  void byDefaultKeysAreHashedInRedisAndFoundAgainByTheirClearForm() {
    String prefix = TestRedis.freshPrefix();
    String apiKey = "sk-live-0123456789abcdef";
    try (RedisRateLimitStore store = RedisRateLimitStore.builder(TestRedis.standaloneClient(),
        TestRedis.standaloneUri()).keyPrefix(prefix).commandTimeout(TestRedis.TEST_TIMEOUT).build()) {
      store.acquire(List.of(ORG, KEY, MODEL), List.of("acme", apiKey, apiKey + "/gpt"), 1,
          Composition.SEQUENTIAL);
      List<String> keys = stateKeys(prefix);
      String root = RedisRateLimitStore.hashedKey("acme");
      assertThat(keys).containsExactlyInAnyOrder(
          prefix + ":{" + root + "}:org:" + root + ":s",
          prefix + ":{" + root + "}:key:" + RedisRateLimitStore.hashedKey(apiKey) + ":s",
          prefix + ":{" + root + "}:model:" + RedisRateLimitStore.hashedKey(apiKey + "/gpt") + ":s");
      assertThat(keys).noneMatch(k -> k.contains("sk-live") || k.contains("acme"));
      assertThat(keys.stream().map(SlotHash::getSlot).distinct()).hasSize(1);

      assertThat(admin(store).inspect(KEY, apiKey).orElseThrow().key()).isEqualTo(apiKey);
      assertThat(admin(store).inspect(KEY, apiKey).orElseThrow().windowUsed()).isEqualTo(1);
      assertThat(admin(store).top(KEY, 10)).extracting(KeySnapshot::key)
          .containsExactly(RedisRateLimitStore.hashedKey(apiKey));
      assertThat(admin(store).trackedKeys(KEY)).isEqualTo(1);
      assertThat(admin(store).reset(KEY, apiKey)).isTrue();
      assertThat(admin(store).inspect(KEY, apiKey)).isEmpty();
      assertThat(admin(store).inspect(ORG, "acme")).isPresent();
    }
  }

  @Test
  void builderRejectsBadSettingsNamingThem() {
    assertThatIllegalArgumentException().isThrownBy(() -> RedisRateLimitStore.builder(" "))
        .withMessageContaining("uri");
    assertThatIllegalArgumentException().isThrownBy(() -> RedisRateLimitStore.builder("nope://x"))
        .withMessageContaining("uri").withMessageContaining("nope://x");
    RedisRateLimitStore.Builder b = RedisRateLimitStore.builder("redis://127.0.0.1:1");
    assertThatIllegalArgumentException().isThrownBy(() -> b.commandTimeout(Duration.ZERO))
        .withMessageContaining("commandTimeout").withMessageContaining("PT0S");
    assertThatIllegalArgumentException().isThrownBy(() -> b.retryInterval(Duration.ofMillis(-1)))
        .withMessageContaining("retryInterval");
    assertThatIllegalArgumentException().isThrownBy(() -> b.slotLease(Duration.ZERO))
        .withMessageContaining("slotLease");
    assertThatIllegalArgumentException().isThrownBy(() -> b.slotLease(Duration.ofDays(2)))
        .withMessageContaining("slotLease").withMessageContaining("PT24H");
    assertThatIllegalArgumentException().isThrownBy(() -> b.keyPrefix("a{b"))
        .withMessageContaining("keyPrefix");
    assertThatIllegalArgumentException().isThrownBy(() -> RedisRateLimitStore.cluster(List.of()))
        .withMessageContaining("seeds");
  }

  /** The keys of a prefix that hold state, a sequence or a plan: not the monitoring structures. */
  private List<String> stateKeys(String prefix) {
    return redis.keys(prefix + ":{*").stream()
        .filter(k -> !k.matches(".*\\}:[^:]*:~(top|keys|spend):[^:]*:[^:]*")).toList();
  }

  private Map<String, Long> commandCalls() {
    return TestRedis.commandCalls(redis);
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
