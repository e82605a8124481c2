package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two gateway instances (two stores with connections of their own) on one Redis, standalone and
 * Cluster, on the server's clock, share each upstream's fair order: a call that waits through one
 * instance is first for the other's admissions, a signal through one reaches the other's
 * listeners, concurrent admissions through both are exact, and an instance that dies with calls
 * waiting holds the order only until their deadline.
 */
class RedisSharedUpstreamOrderTests {

  enum Topology { STANDALONE, CLUSTER }

  private static final Budget TENANT = new Budget("tenant", WindowLimit.perMinute(10_000), null);
  private static final Duration MINUTE = Duration.ofMinutes(1);

  /** A gateway instance on {@code topology} under {@code prefix}, on the server's clock. */
  private static RedisRateLimitStore instance(Topology topology, String prefix) {
    RedisRateLimitStore.Builder b = topology == Topology.STANDALONE
        ? RedisRateLimitStore.builder(TestRedis.standaloneUri())
        : RedisRateLimitStore.builder(TestRedis.clusterClient()).hashKeys(false);
    return b.keyPrefix(prefix).commandTimeout(TestRedis.TEST_TIMEOUT)
        .failurePolicy(FailurePolicy.FAIL_CLOSED).build();
  }

  private static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("the stage did not complete", e);
    }
  }

  private static UpstreamTurn turn(String tenant) {
    return new UpstreamTurn(tenant, 1, 0, 100, null);
  }

  private static Decision reserve(RedisRateLimitStore store, Upstream u, UpstreamTurn turn) {
    return store.reserve(List.of(TENANT), List.of(turn.tenant()), 1,
        Consumption.ofCall(turn.estimate(), 0), Composition.SEQUENTIAL, u, turn).decision();
  }

  private static String enter(RedisRateLimitStore store, Upstream u, UpstreamTurn turn,
      Duration maxWait) {
    return join(store.upstreamOrder().enter(u, turn, maxWait));
  }

  private static void assertOrderDeny(Decision d) {
    assertThat(d.allowed()).as(d.toString()).isFalse();
    assertThat(d.reason()).as(d.toString()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(d.retryAfterMs()).as(d.toString())
        .isEqualTo(RedisUpstreamOrder.POLL_INTERVAL.toMillis());
  }

  @ParameterizedTest
  @EnumSource(Topology.class)
  void callsWaitingThroughOneInstanceAreFirstForTheOthersAdmissions(Topology topology) {
    String prefix = TestRedis.freshPrefix();
    Upstream u = new Upstream("openai", WindowLimit.perMinute(100), null, null);
    try (RedisRateLimitStore one = instance(topology, prefix);
        RedisRateLimitStore two = instance(topology, prefix)) {
      String a = enter(one, u, turn("a"), MINUTE);
      String b = enter(one, u, turn("b"), MINUTE);
      assertThat(join(two.upstreamOrder().first(u))).contains(a);
      assertThat(join(two.upstreamOrder().waiting(u))).isEqualTo(2);
      assertOrderDeny(reserve(two, u, turn("c")));
      assertOrderDeny(reserve(two, u, turn("b").waiting(b)));
      assertThat(reserve(two, u, turn("a").waiting(a)).allowed()).isTrue();
      assertThat(join(one.upstreamOrder().first(u))).contains(b);
      assertThat(reserve(one, u, turn("b").waiting(b)).allowed()).isTrue();
      assertThat(join(two.upstreamOrder().waiting(u))).isZero();
      assertThat(reserve(two, u, turn("c")).allowed()).isTrue();
      assertThat(one.upstreamStatus(u).requestsRemaining()).as("three admitted, nothing else")
          .isEqualTo(97);
    }
  }

  @ParameterizedTest
  @EnumSource(Topology.class)
  void signalsThroughOneInstanceReachTheOthersListenersWhileCallsWait(Topology topology)
      throws Exception {
    String prefix = TestRedis.freshPrefix();
    Upstream openai = new Upstream("openai", WindowLimit.perMinute(100), null, null);
    Upstream azure = new Upstream("azure", WindowLimit.perMinute(100), null, null);
    try (RedisRateLimitStore one = instance(topology, prefix);
        RedisRateLimitStore two = instance(topology, prefix)) {
      List<String> heard = new CopyOnWriteArrayList<>();
      RedisUpstreamOrder order = (RedisUpstreamOrder) one.upstreamOrder();
      join(order.subscribed());
      try (AutoCloseable listening = two.upstreamOrder().listen(heard::add)) {
        join(((RedisUpstreamOrder) two.upstreamOrder()).subscribed());
        enter(two, azure, turn("a"), MINUTE);
        // one learns from the waiting channel that calls wait, and publishes its signals
        await().atMost(Duration.ofSeconds(10)).until(() -> order.mayWait("azure"));
        assertThat(order.mayWait("openai")).isFalse();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
          order.signal("azure");
          assertThat(heard).contains("azure");
        });
        // the admission of the first call, while another waits, wakes the listeners by itself
        String a = enter(two, openai, turn("a"), MINUTE);
        enter(two, openai, turn("b"), MINUTE);
        assertThat(reserve(one, openai, turn("a").waiting(a)).allowed()).isTrue();
        await().atMost(Duration.ofSeconds(10)).until(() -> heard.contains("openai"));
      }
    }
  }

  /**
   * With no call waiting, a decision with a turn is one script call whose gate is one {@code
   * EXISTS}, and a signal and a settlement send nothing to Redis (this instance's listeners are
   * told at once); once a call waited, a settlement goes to Redis.
   */
  @Test
  void withNoCallWaitingADecisionIsOneScriptCallAndASignalSendsNothing() throws Exception {
    String prefix = TestRedis.freshPrefix();
    Upstream u = new Upstream("openai", WindowLimit.perMinute(1_000), null, null);
    RedisCommands<String, String> redis = TestRedis.standaloneCommands();
    // its heartbeat runs at start only: none falls between the server's command counts
    try (RedisRateLimitStore store = RedisRateLimitStore.builder(TestRedis.standaloneUri())
        .keyPrefix(prefix).commandTimeout(TestRedis.TEST_TIMEOUT)
        .failurePolicy(FailurePolicy.FAIL_CLOSED).heartbeatInterval(Duration.ofHours(1)).build()) {
      UpstreamOrder order = store.upstreamOrder();
      join(((RedisUpstreamOrder) order).subscribed());
      List<String> heard = new CopyOnWriteArrayList<>();
      try (AutoCloseable listening = order.listen(heard::add)) {
        assertThat(reserve(store, u, turn("warm-up")).allowed()).isTrue();
        redis.configResetstat();
        for (int i = 0; i < 10; i++) {
          assertThat(reserve(store, u, turn("t" + i % 3)).allowed()).isTrue();
          order.signal("openai");
          join(order.settled(u, turn("t" + i % 3), 7));
        }
        Map<String, Long> calls = TestRedis.commandCalls(redis);
        assertThat(calls).containsEntry("evalsha", 10L).containsEntry("exists", 10L);
        assertThat(calls).doesNotContainKey("publish");
        await().atMost(Duration.ofSeconds(10)).until(() -> heard.size() == 10);
        assertThat(heard).containsOnly("openai");

        String waiter = enter(store, u, turn("t0"), Duration.ofSeconds(30));
        redis.configResetstat();
        join(order.settled(u, turn("t1"), 7));
        Map<String, Long> settle = TestRedis.commandCalls(redis);
        assertThat(settle.getOrDefault("evalsha", 0L) + settle.getOrDefault("eval", 0L))
            .as("the settlement's script calls, in %s", settle).isPositive();
        join(order.leave(u, waiter));
      }
    }
  }

  /**
   * The keys of one order may expire apart when nothing reads it for long (Redis unreachable for
   * over a minute): an index entry whose keys are gone is taken out as the order is read, and no
   * script fails on it.
   */
  @Test
  void indexEntriesWhoseKeysExpiredAreTakenOutAsTheOrderIsRead() {
    String prefix = TestRedis.freshPrefix();
    Upstream u = new Upstream("openai", WindowLimit.perMinute(1_000), null, null);
    RedisCommands<String, String> redis = TestRedis.standaloneCommands();
    try (RedisRateLimitStore store = instance(Topology.STANDALONE, prefix)) {
      UpstreamOrder order = store.upstreamOrder();
      String a = enter(store, u, turn("a"), MINUTE);
      String b = enter(store, u, turn("b"), MINUTE);
      assertThat(join(order.first(u))).contains(a);
      // a's list of waiting calls and its call's hash expired; the tenant index still names it
      for (String key : redis.keys(prefix + "*:o:t:*")) {
        if (redis.lindex(key, 0).endsWith(a)) {
          redis.del(key);
        }
      }
      redis.del(redis.keys(prefix + "*:o:w:" + a).toArray(new String[0]));
      assertThat(join(order.first(u))).contains(b);
      assertThat(reserve(store, u, turn("b").waiting(b)).allowed()).isTrue();

      // a class index whose tenants' keys expired: none waits, and the gate opens again
      enter(store, u, turn("c"), MINUTE);
      redis.del(redis.keys(prefix + "*:o:q:*").toArray(new String[0]));
      assertThat(join(order.first(u))).isEmpty();
      assertThat(redis.keys(prefix + "*:o:n")).isEmpty();
      assertThat(reserve(store, u, turn("d")).allowed()).isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(Topology.class)
  void anInstanceThatDiesHoldsTheOrderOnlyUntilItsCallsDeadline(Topology topology) {
    String prefix = TestRedis.freshPrefix();
    Upstream u = new Upstream("openai", WindowLimit.perMinute(100), null, null);
    try (RedisRateLimitStore two = instance(topology, prefix)) {
      long entered = System.nanoTime();
      try (RedisRateLimitStore dead = instance(topology, prefix)) {
        enter(dead, u, turn("a"), Duration.ofSeconds(3));
      } // closed without leaving: its call stays in Redis
      assertOrderDeny(reserve(two, u, turn("c")));
      assertThat(join(two.upstreamOrder().waiting(u))).isOne();
      await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100))
          .until(() -> reserve(two, u, turn("c")).allowed());
      assertThat(System.nanoTime() - entered).as("held until the deadline")
          .isGreaterThanOrEqualTo(Duration.ofMillis(2_900).toNanos());
      assertThat(join(two.upstreamOrder().waiting(u))).isZero();
      assertThat(join(two.upstreamOrder().first(u))).isEmpty();
      assertThat(two.upstreamStatus(u).requestsRemaining()).as("only the admission charged")
          .isEqualTo(99);
    }
  }

  @RepeatedTest(20)
  void concurrentWaitingCallsThroughTwoInstancesAreAdmittedExactlyOnStandalone(
      RepetitionInfo repetition) throws Exception {
    concurrentWaitingCallsAreAdmittedExactly(Topology.STANDALONE,
        repetition.getCurrentRepetition());
  }

  @RepeatedTest(5)
  void concurrentWaitingCallsThroughTwoInstancesAreAdmittedExactlyOnTheCluster(
      RepetitionInfo repetition) throws Exception {
    concurrentWaitingCallsAreAdmittedExactly(Topology.CLUSTER, repetition.getCurrentRepetition());
  }

  /**
   * Every call of 4 threads (two per instance) waits in the order and tries its turn until the
   * order admits it or the upstream is full (a deny longer than the poll interval): exactly the
   * upstream's limit is admitted, each call at most once, the tenants charged for those only; a
   * turn without a waiting call is never admitted while calls wait.
   */
  private static void concurrentWaitingCallsAreAdmittedExactly(Topology topology, int repetition)
      throws Exception {
    String prefix = TestRedis.freshPrefix();
    int limit = 25 + repetition;
    Upstream u = new Upstream("hot-" + repetition, new WindowLimit(limit, Duration.ofMinutes(10)),
        null, null);
    Set<String> admitted = ConcurrentHashMap.newKeySet();
    try (RedisRateLimitStore one = instance(topology, prefix);
        RedisRateLimitStore two = instance(topology, prefix)) {
      List<Decision> all = TwoInstances.hammer(one, two, 2, 20, (store, thread, i) -> {
        UpstreamTurn t = turn("t" + (thread + i) % 5);
        String id = enter(store, u, t, MINUTE);
        Decision other = reserve(store, u, turn("x" + thread));
        assertThat(other.allowed()).as("a turn without a waiting call: " + other).isFalse();
        while (true) {
          Decision d = reserve(store, u, t.waiting(id));
          if (d.allowed()) {
            assertThat(admitted.add(id)).as("admitted once: " + id).isTrue();
            return d;
          }
          assertThat(d.reason()).as(d.toString()).isEqualTo(Reason.UPSTREAM_LIMIT);
          if (d.retryAfterMs() > RedisUpstreamOrder.POLL_INTERVAL.toMillis()) {
            join(store.upstreamOrder().leave(u, id)); // the upstream is full
            return d;
          }
          Thread.yield();
        }
      });
      assertThat(all).filteredOn(Decision::allowed).hasSize(limit);
      assertThat(admitted).hasSize(limit);
      assertThat(join(one.upstreamOrder().waiting(u))).isZero();
      assertThat(two.upstreamStatus(u).requestsRemaining()).isZero();
      long charged = 0;
      for (int t = 0; t < 5; t++) {
        charged += one.administration().orElseThrow().inspect(TENANT, "t" + t)
            .map(KeySnapshot::windowUsed).orElse(0L);
      }
      for (int t = 0; t < 4; t++) {
        assertThat(one.administration().orElseThrow().inspect(TENANT, "x" + t)
            .map(KeySnapshot::windowUsed)).as("denied turns charged nothing")
            .isIn(Optional.empty(), Optional.of(0L));
      }
      assertThat(charged).as("tenants charged for the admitted calls only").isEqualTo(limit);
    }
  }
}
