package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.temporal.ChronoUnit;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code write-back.lua} on the shared standalone server, fed by an {@link OutageJournal} built
 * here (what a local fallback would have admitted, at times of the test's ticker): window entries
 * at their times, bucket and model-token charges, quota charges, slots still held, settlements
 * made before the write-back, a batch sent twice, and the journal's bounds.
 */
class WriteBackScriptTests {

  private final ManualTicker ticker = new ManualTicker();
  /** A wall clock for quota periods, early in a day so a day's period holds the test. */
  private final InstantSource wall = InstantSource.fixed(Instant.now().truncatedTo(ChronoUnit.DAYS)
      .plus(1, ChronoUnit.DAYS).plus(1, ChronoUnit.HOURS));
  private final String prefix = TestRedis.freshPrefix();
  private final RedisRateLimitStore store =
      TestRedis.standalone(ticker).keyPrefix(prefix).hashKeys(false).wallClock(wall).build();
  private final LuaRateLimitStore lua = ((GuardedRedisStore) store).lua();
  private final OutageJournal journal = new OutageJournal();
  /** The fallback's reservation ids: small, as an in-memory store numbers them. */
  private long fallbackIds;

  @AfterEach
  void close() {
    store.close();
  }

  /** Records a call the fallback admitted {@code ago} before now; returns its reservation. */
  private Reservation admitted(LuaRateLimitStore.Call call, Duration ago) {
    boolean numbered = call.reserve() && call.levels().stream()
        .anyMatch(b -> b.concurrency() != null || b.modelTokens() != null
            || !b.quotas().isEmpty());
    Reservation made = new Reservation(Decision.allow(0, 0, call.levels().get(0).name()),
        call.levels(), call.keys(), call.estimate(), numbered ? ++fallbackIds : 0, 0, 0);
    journal.add(call, made, ticker.read() - ago.toNanos());
    return made;
  }

  /** Sends the next batch of {@code root} and takes its acknowledgement. */
  private List<OutageJournal.Follow> writeBack(String root) {
    OutageJournal.Batch batch = journal.next(root);
    assertThat(batch).isNotNull();
    long[] ids = lua.submitWriteBack(batch, ticker.read()).join();
    return journal.acknowledged(batch, ids, ticker.read());
  }

  private LuaRateLimitStore.Call acquire(Budget b, String key, double cost) {
    return lua.plan(b, key, cost, Composition.SEQUENTIAL);
  }

  @Test
  void windowEntriesKeepTheirTimesAmongRedisOwnAndLeaveTheWindowWithThem() {
    Budget five = new Budget("rpm", WindowLimit.perMinute(5), null);
    assertThat(store.acquire(five, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue(); // at now
    admitted(acquire(five, "t", 1), Duration.ofSeconds(70)); // already left the window
    admitted(acquire(five, "t", 1), Duration.ofSeconds(50));
    admitted(acquire(five, "t", 1), Duration.ofSeconds(10));
    writeBack("t");
    long now = ticker.read();
    StoredState state = StoredState.read(prefix + ":{t}:rpm:t:s");
    assertThat(state.admissions()).containsExactly(now - 50_000_000_000L,
        now - 10_000_000_000L, now);
    assertThat(journal.isEmpty()).isTrue();
    assertThat(store.acquire(five, "t", 1, Composition.SEQUENTIAL).remaining()).isEqualTo(1);
    assertThat(store.acquire(five, "t", 1, Composition.SEQUENTIAL).remaining()).isZero();
    Decision full = store.acquire(five, "t", 1, Composition.SEQUENTIAL);
    assertThat(full.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(full.retryAfterMs()).as("the entry written back 50 s ago leaves first")
        .isEqualTo(10_000);
    ticker.advance(Duration.ofSeconds(10));
    assertThat(store.acquire(five, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
  }

  @Test
  void theBucketIsChargedEveryCostAtTheWriteBack() {
    Budget burst = new Budget("burst", null, new BucketLimit(10, 1));
    admitted(acquire(burst, "t", 2), Duration.ofSeconds(3));
    admitted(acquire(burst, "t", 3), Duration.ofSeconds(1));
    writeBack("t");
    KeySnapshot s = store.administration().orElseThrow().inspect(burst, "t").orElseThrow();
    assertThat(s.tokens()).isEqualTo(5.0);
    assertThat(store.acquire(burst, "t", 5, Composition.SEQUENTIAL).allowed()).isTrue();
    assertThat(store.acquire(burst, "t", 1, Composition.SEQUENTIAL).reason())
        .isEqualTo(Reason.BURST_LIMIT);
  }

  @Test
  void modelTokensAreChargedAtTheirTimesWithTheUsageOfCallsSettledBeforeAndAfter() {
    Budget tpm = new Budget("tpm", null, null, ModelTokenLimit.perMinute(1000));
    LuaRateLimitStore.Call call = lua.planReserve(List.of(tpm), List.of("t"), 1, 300,
        Composition.SEQUENTIAL);
    Reservation settledBefore = admitted(call, Duration.ofSeconds(40));
    Reservation settledAfter = admitted(call, Duration.ofSeconds(20));
    assertThat(journal.settled(settledBefore, new Consumption(1, 100, 0))).isNull();
    writeBack("t");
    assertThat(inspect(tpm).modelTokensUsed()).isEqualTo(400);
    Reservation onRedis = journal.settled(settledAfter, new Consumption(1, 50, 0));
    assertThat(onRedis).isNotNull();
    assertThat(LuaRateLimitStore.fromRedis(onRedis)).isTrue();
    lua.submitReconcile(onRedis, new Consumption(1, 50, 0)).join();
    assertThat(inspect(tpm).modelTokensUsed()).isEqualTo(150);
    ticker.advance(Duration.ofSeconds(20)); // the entry of 40 s ago leaves
    assertThat(inspect(tpm).modelTokensUsed()).isEqualTo(50);
  }

  @Test
  void quotasAreChargedWhatWasAdmittedAndWhatWasUsed() {
    QuotaLimit calls = QuotaLimit.of("calls", QuotaUnit.REQUESTS, 5, QuotaPeriod.DAY);
    QuotaLimit tokens = QuotaLimit.of("tokens", QuotaUnit.TOKENS, 1000, QuotaPeriod.DAY);
    List<Budget> levels = List.of(
        new Budget("chat", null, null, null, null, List.of(calls, tokens), null));
    LuaRateLimitStore.Call call = lua.planReserve(levels, List.of("t"), 1,
        new Consumption(1, 200, 0), Composition.SEQUENTIAL);
    Reservation settled = admitted(call, Duration.ofSeconds(5));
    admitted(call, Duration.ofSeconds(4));
    journal.settled(settled, new Consumption(1, 30, 0));
    writeBack("t");
    Reservation next = store.reserve(levels, List.of("t"), 1, new Consumption(1, 200, 0),
        Composition.SEQUENTIAL);
    assertThat(next.decision().allowed()).isTrue();
    assertThat(next.quotas()).extracting(q -> q.used()).containsExactly(3L, 430L);
    assertThat(next.quotas()).extracting(q -> q.pending()).containsExactly(0L, 400L);
    store.reserve(levels, List.of("t"), 1, new Consumption(1, 1, 0), Composition.SEQUENTIAL);
    store.reserve(levels, List.of("t"), 1, new Consumption(1, 1, 0), Composition.SEQUENTIAL);
    assertThat(store.reserve(levels, List.of("t"), 1, new Consumption(1, 1, 0),
        Composition.SEQUENTIAL).decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
  }

  @Test
  void slotsStillHeldAreTakenWithTheirLeaseAndReleasedOrRenewedLikeOthers() {
    Budget two = new Budget("par", null, null, null, ConcurrencyLimit.of(2));
    LuaRateLimitStore.Call call = lua.planReserve(List.of(two), List.of("t"), 1, 0,
        Composition.SEQUENTIAL);
    Reservation held = admitted(call, Duration.ofSeconds(2));
    Reservation ended = admitted(call, Duration.ofSeconds(1));
    assertThat(journal.released(ended)).isNull(); // its call ended before the write-back
    List<OutageJournal.Follow> follow = writeBack("t");
    assertThat(follow).hasSize(1);
    assertThat(follow.get(0).renew()).as("a slot held on Redis is renewed").isTrue();
    assertThat(inspect(two).inFlight()).isEqualTo(1);
    Reservation mine = store.reserve(List.of(two), List.of("t"), 1, 0, Composition.SEQUENTIAL);
    assertThat(mine.decision().allowed()).isTrue();
    assertThat(store.reserve(List.of(two), List.of("t"), 1, 0, Composition.SEQUENTIAL)
        .decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    assertThat(lua.submitRenew(lua.slotKeys(follow.get(0).onRedis()),
        new long[][] {{follow.get(0).onRedis().id()}}).join()).isEqualTo(1);
    Reservation onRedis = journal.released(held);
    assertThat(onRedis).isEqualTo(follow.get(0).onRedis());
    lua.submitRelease(onRedis).join();
    assertThat(inspect(two).inFlight()).isEqualTo(1); // mine
    // the lease timeout counts from the call's own time: 10 minutes after it, minus 2 s
    admitted(call, Duration.ofMinutes(10).minusSeconds(1));
    admitted(call, Duration.ofMinutes(10).plusSeconds(1)); // its lease ended: not taken
    writeBack("t");
    assertThat(inspect(two).inFlight()).isEqualTo(2);
    ticker.advance(Duration.ofSeconds(1));
    assertThat(inspect(two).inFlight()).as("the slot written back expires at its cap").isEqualTo(1);
  }

  @Test
  void onServerTimeEntriesAreWholeMicrosecondsSoThatALaterCallIsRefundedExactly() {
    Budget three = new Budget("rpm", WindowLimit.perMinute(3), null);
    try (RedisRateLimitStore onServerTime = RedisRateLimitStore.builder(TestRedis.standaloneUri())
        .keyPrefix(TestRedis.freshPrefix()).failurePolicy(FailurePolicy.FAIL_CLOSED).build()) {
      LuaRateLimitStore server = ((GuardedRedisStore) onServerTime).lua();
      LuaRateLimitStore.Call call = server.plan(three, "t", 1, Composition.SEQUENTIAL);
      Reservation made = new Reservation(Decision.allow(0, 0, "rpm"), call.levels(), call.keys(),
          0, 0, 0, 0);
      long local = System.nanoTime(); // the fallback's ticker, in nanoseconds
      journal.add(call, made, local - 3_000_000_333L);
      journal.add(call, made, local - 2_000_000_777L);
      server.submitWriteBack(journal.next("t"), local).join();
      AcquireReply third = server.submit(call, System.nanoTime() + 5_000_000_000L).join();
      assertThat(third.values[0]).isEqualTo(1);
      assertThat(server.refund(call, third).join()).isTrue();
      assertThat(onServerTime.administration().orElseThrow().inspect(three, "t").orElseThrow()
          .windowUsed()).as("the refund took the third call's own entry").isEqualTo(2);
    }
  }

  @Test
  void aBatchSentTwiceIsAppliedOnceAndAnswersTheSameIds() {
    Budget both = new Budget("both", WindowLimit.perMinute(10), new BucketLimit(10, 1),
        ModelTokenLimit.perMinute(1000), ConcurrencyLimit.of(5));
    LuaRateLimitStore.Call call = lua.planReserve(List.of(both), List.of("t"), 2, 100,
        Composition.SEQUENTIAL);
    admitted(call, Duration.ofSeconds(3));
    admitted(call, Duration.ofSeconds(2));
    OutageJournal.Batch batch = journal.next("t");
    long[] first = lua.submitWriteBack(batch, ticker.read()).join();
    KeySnapshot once = inspect(both);
    long[] again = lua.submitWriteBack(batch, ticker.read()).join();
    assertThat(again).containsExactly(first);
    assertThat(first).hasSize(2);
    assertThat(first[0]).isGreaterThan(LuaRateLimitStore.RESERVATION_ID_BASE);
    assertThat(inspect(both)).isEqualTo(once);
    assertThat(once.windowUsed()).isEqualTo(2);
    assertThat(once.tokens()).isEqualTo(6.0);
    assertThat(once.modelTokensUsed()).isEqualTo(200);
    assertThat(once.inFlight()).isEqualTo(2);
    assertThat(journal.acknowledged(batch, first, ticker.read())).hasSize(2);
    assertThat(journal.acknowledged(batch, again, ticker.read()))
        .as("acknowledged once").isEmpty();
    assertThat(journal.next("t")).isNull();
  }

  @Test
  void aRootsCallsGoInBatchesOfBoundedSizeAndTheJournalDropsItsOldestPastItsBound() {
    Budget big = new Budget("rpm", WindowLimit.perMinute(1000), null);
    for (int i = 0; i < OutageJournal.MAX_BATCH + 44; i++) {
      admitted(acquire(big, "t", 1), Duration.ofMillis(i));
    }
    assertThat(journal.next("t").calls()).hasSize(OutageJournal.MAX_BATCH);
    writeBack("t");
    assertThat(journal.size()).isEqualTo(44);
    writeBack("t");
    assertThat(journal.isEmpty()).isTrue();
    assertThat(inspect(big).windowUsed()).isEqualTo(OutageJournal.MAX_BATCH + 44);

    OutageJournal bounded = new OutageJournal();
    LuaRateLimitStore.Call call = acquire(big, "u", 1);
    Reservation made = new Reservation(Decision.allow(0, 0, "rpm"), call.levels(), call.keys(),
        0, 0, 0, 0);
    for (int i = 0; i < OutageJournal.MAX_CALLS + 3; i++) {
      bounded.add(call, made, i);
    }
    assertThat(bounded.size()).isEqualTo(OutageJournal.MAX_CALLS);
    assertThat(bounded.dropped()).isEqualTo(3);
    assertThat(bounded.next("u").calls().get(0).at).as("the oldest were dropped").isEqualTo(3);
  }

  @Test
  void onAClusterOneScriptCallWritesBackEveryLevelOfARootUnderItsHashTag() {
    Budget org = new Budget("org", WindowLimit.perMinute(10), null,
        ModelTokenLimit.perMinute(1000), ConcurrencyLimit.of(3),
        List.of(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY)), null);
    Budget key = new Budget("key", WindowLimit.perMinute(5), new BucketLimit(4, 1));
    try (RedisRateLimitStore cluster = TestRedis.cluster(ticker).wallClock(wall).build()) {
      LuaRateLimitStore onCluster = ((GuardedRedisStore) cluster).lua();
      for (String root : List.of("acme", "globex", "initech")) { // spread over the masters
        LuaRateLimitStore.Call call = onCluster.planReserve(List.of(org, key),
            List.of(root, root + ":sk-1"), 1, new Consumption(1, 100, 0), Composition.SEQUENTIAL);
        admitted(call, Duration.ofSeconds(2));
        admitted(call, Duration.ofSeconds(1));
        OutageJournal.Batch batch = journal.next(root);
        long[] ids = onCluster.submitWriteBack(batch, ticker.read()).join();
        assertThat(onCluster.submitWriteBack(batch, ticker.read()).join()).containsExactly(ids);
        assertThat(journal.acknowledged(batch, ids, ticker.read())).hasSize(2);
        Reservation next = cluster.reserve(List.of(org, key), List.of(root, root + ":sk-1"), 1,
            new Consumption(1, 100, 0), Composition.SEQUENTIAL);
        assertThat(next.decision().allowed()).isTrue();
        assertThat(next.quotas().get(0).used()).isEqualTo(3);
        KeySnapshot o = cluster.administration().orElseThrow().inspect(org, root).orElseThrow();
        assertThat(o.windowUsed()).isEqualTo(3);
        assertThat(o.modelTokensUsed()).isEqualTo(300);
        assertThat(o.inFlight()).isEqualTo(3);
        KeySnapshot k = cluster.administration().orElseThrow().inspect(key, root + ":sk-1")
            .orElseThrow();
        assertThat(k.windowUsed()).isEqualTo(3);
        assertThat(k.tokens()).isEqualTo(1.0);
      }
    }
  }

  private KeySnapshot inspect(Budget b) {
    return store.administration().orElseThrow().inspect(b, "t").orElseThrow();
  }
}
