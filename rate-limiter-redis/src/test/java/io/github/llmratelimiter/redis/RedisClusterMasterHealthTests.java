package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Health per master on a 3-master Redis Cluster of this test's own, one master frozen ({@code
 * SIGSTOP}): the keys the other masters serve keep being decided on Redis with no added wait, the
 * keys of the frozen master go to the failure policy within the silence timeout, and come back to
 * Redis after the master resumes.
 *
 * <p>The nodes run with {@code cluster-require-full-coverage no}, so that the healthy masters keep
 * serving their slots should the freeze outlast the {@code cluster-node-timeout} on a slow machine
 * (with full coverage required, Redis itself refuses every slot once a master is marked failed).
 * The store's waits are short so that the test takes a few seconds: a silence of {@value
 * #SILENCE_MS} ms, a longest wait of {@value #MAX_WAIT_MS} ms, a retry interval of {@value
 * #RETRY_MS} ms, and a breaker that opens at half of the last 4 calls (from 2). Every latency bound
 * is generous for a busy machine and half the longest wait: a call to a healthy master that waited
 * for the frozen one (its silence or its breaker) would take the longest wait, or be answered by
 * the policy.
 */
class RedisClusterMasterHealthTests {

  private static final long SILENCE_MS = 500;
  private static final long MAX_WAIT_MS = 5000;
  private static final long RETRY_MS = 500;
  /** Half the longest wait: no call here may wait this long. */
  private static final long BOUND_MS = MAX_WAIT_MS / 2;
  /** How long the master stays frozen while calls go on. */
  private static final long FROZEN_MS = 3000;
  /**
   * A bucket that never runs dry here, and slots for calls in flight: a reservation holds one, so
   * Redis numbers it ({@link LuaRateLimitStore#fromRedis} tells who made it), it is renewed while
   * held, and released on the master that took it.
   */
  private static final Budget PLENTY = new Budget("calls", null,
      new BucketLimit(1_000_000, 1_000_000), null, ConcurrencyLimit.of(1000));
  private static final int MASTERS = 3;

  private static List<RedisServer> nodes;

  @BeforeAll
  static void startCluster() {
    nodes = TestRedis.startCluster(MASTERS, "--cluster-require-full-coverage", "no");
  }

  @AfterAll
  static void stopCluster() {
    if (nodes != null) {
      nodes.forEach(RedisServer::thaw);
      nodes.forEach(RedisServer::close);
    }
  }

  private static RedisRateLimitStore.Builder store(FailurePolicy policy) {
    List<RedisURI> seeds = new ArrayList<>();
    nodes.forEach(n -> seeds.add(n.uri()));
    return RedisRateLimitStore.cluster(seeds)
        .keyPrefix(TestRedis.freshPrefix())
        .hashKeys(false) // the hash tag is the tenant in clear: its slot is known here
        .commandTimeout(Duration.ofMillis(SILENCE_MS))
        .maxWait(Duration.ofMillis(MAX_WAIT_MS))
        .retryInterval(Duration.ofMillis(RETRY_MS))
        .circuitBreaker(50, 4, 2, 1)
        .failurePolicy(policy);
  }

  /** The node that serves a tenant's keys, by the slots {@link TestRedis#startCluster} gives. */
  private static int nodeOf(String tenant) {
    return Math.min(MASTERS - 1, SlotHash.getSlot(tenant) / (16384 / MASTERS));
  }

  /** Tenants whose keys the node {@code node} serves. */
  private static List<String> tenantsOn(int node, int count) {
    List<String> tenants = new ArrayList<>();
    for (int i = 0; tenants.size() < count; i++) {
      if (nodeOf("tenant" + i) == node) {
        tenants.add("tenant" + i);
      }
    }
    return tenants;
  }

  private static Reservation reserve(RedisRateLimitStore store, String tenant) {
    return store.reserve(List.of(PLENTY), List.of(tenant), 1, 0, Composition.SEQUENTIAL);
  }

  /** One call's outcome and how long its caller waited for it and for its release. */
  private record Timed(String tenant, Reservation reservation, long millis) {
    static Timed of(RedisRateLimitStore store, String tenant) {
      long start = System.nanoTime();
      Reservation r = reserve(store, tenant);
      store.release(r);
      return new Timed(tenant, r, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }

    boolean fromRedis() {
      return LuaRateLimitStore.fromRedis(reservation);
    }
  }

  @ParameterizedTest
  @EnumSource(value = FailurePolicy.class, names = {"LOCAL_FALLBACK", "FAIL_CLOSED"})
  void healthyMastersKeepDecidingOnRedisWhileAnotherMasterIsFrozen(FailurePolicy policy)
      throws Exception {
    try (RedisRateLimitStore store = store(policy).build()) {
      RedisMasters masters = ((GuardedRedisStore) store).lua().masters();
      // the master that also serves the live-instance set: its heartbeats fail with it, and count
      // for its breaker alone
      String instances = ((GuardedRedisStore) store).lua().instancesKey();
      awaitTopology(masters);
      int frozen = masterIndex(masters, masters.forKey(instances));
      List<String> onFrozen = tenantsOn(frozen, 3);
      List<String> healthy = new ArrayList<>();
      for (int n = 0; n < MASTERS; n++) {
        if (n != frozen) {
          healthy.addAll(tenantsOn(n, 3));
        }
      }
      List<String> all = new ArrayList<>(healthy);
      all.addAll(onFrozen);
      for (String t : all) {
        // a Cluster just started may time out a first call while its masters warm up (the
        // failure policy answers it): every tenant is decided on Redis within the bound
        await("before the freeze, " + t + " decided on Redis", () -> Timed.of(store, t).fromRedis());
      }
      for (String t : all) { // the slots computed here are those the cluster serves
        assertThat(keysOn(nodes.get(nodeOf(t)), "*{" + t + "}*")).as("keys of %s", t).isPositive();
      }

      // calls in flight across the freeze, one on each master: their slots are renewed per master
      List<Reservation> held = new ArrayList<>();
      for (int n = 0; n < MASTERS; n++) {
        held.add(reserve(store, tenantsOn(n, 1).get(0)));
      }
      assertThat(((GuardedRedisStore) store).renewedCalls()).isEqualTo(MASTERS);

      List<Timed> healthyCalls = new ArrayList<>();
      List<Timed> frozenCalls = new ArrayList<>();
      AtomicBoolean stop = new AtomicBoolean();
      boolean degradedWhileFrozen;
      boolean pingedWhileFrozen;
      long asyncMs;
      Reservation asyncOnFrozen;
      nodes.get(frozen).freeze();
      try {
        // tenants on the healthy masters call on all the while, on a thread of their own
        CompletableFuture<Void> traffic = CompletableFuture.runAsync(() -> {
          for (int i = 0; !stop.get(); i++) {
            healthyCalls.add(Timed.of(store, healthy.get(i % healthy.size())));
          }
        });
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FROZEN_MS);
        for (int i = 0; System.nanoTime() - until < 0; i++) {
          frozenCalls.add(Timed.of(store, onFrozen.get(i % onFrozen.size())));
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // a caller's pace, not a spin
        }
        long start = System.nanoTime();
        asyncOnFrozen = store.reserveAsync(List.of(PLENTY), List.of(onFrozen.get(0)), 1, 0,
            Composition.SEQUENTIAL).toCompletableFuture().get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
        asyncMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        start = System.nanoTime();
        ((GuardedRedisStore) store).renewSlots().get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
        long renewMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(renewMs).as("renewals on every master").isLessThan(BOUND_MS);
        degradedWhileFrozen = store.degraded();
        pingedWhileFrozen = store.ping();
        if (policy == FailurePolicy.FAIL_CLOSED) { // the administration reads every master
          assertThatIllegalStateException()
              .isThrownBy(() -> admin(store).trackedKeys(PLENTY));
        } else {
          assertThat(admin(store).trackedKeys(PLENTY)).isPositive(); // this instance's share
        }
        for (int n = 0; n < MASTERS; n++) {
          RedisMasters.Master m = masters.forKey("{" + tenantsOn(n, 1).get(0) + "}");
          assertThat(m.breaker().degraded()).as("breaker of node %d", n).isEqualTo(n == frozen);
        }
        stop.set(true);
        traffic.get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
      } finally {
        stop.set(true);
        nodes.get(frozen).thaw();
      }

      long healthyMax = healthyCalls.stream().mapToLong(Timed::millis).max().orElseThrow();
      long frozenMax = frozenCalls.stream().mapToLong(Timed::millis).max().orElseThrow();
      System.out.printf("[cluster-health] %s: %d calls to healthy masters (max %d ms),"
          + " %d to the frozen one (max %d ms)%n", policy, healthyCalls.size(), healthyMax,
          frozenCalls.size(), frozenMax);
      assertThat(healthyCalls).hasSizeGreaterThan(20);
      for (Timed c : healthyCalls) {
        assertThat(c.fromRedis()).as("%s decided on Redis", c.tenant()).isTrue();
        assertThat(c.reservation().decision().allowed()).isTrue();
        assertThat(c.millis()).as("wait of %s", c.tenant()).isLessThan(BOUND_MS);
      }
      // the frozen master's keys: the policy answered, each within the silence timeout (the first
      // ones waited it out; once the breaker opened, at once)
      assertThat(frozenCalls).hasSizeGreaterThan(2);
      for (Timed c : frozenCalls) {
        assertThat(c.fromRedis()).as("%s answered by the policy", c.tenant()).isFalse();
        assertThat(c.millis()).as("wait of %s", c.tenant()).isLessThan(BOUND_MS);
        if (policy == FailurePolicy.FAIL_CLOSED) {
          assertThat(c.reservation().decision().reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
        } else {
          assertThat(c.reservation().decision().allowed()).isTrue(); // the fallback's share
        }
      }
      assertThat(LuaRateLimitStore.fromRedis(asyncOnFrozen)).isFalse();
      assertThat(asyncMs).isLessThan(BOUND_MS);
      assertThat(degradedWhileFrozen).isTrue();
      assertThat(pingedWhileFrozen).isFalse();
      assertThat(store.errorCount()).isPositive();

      // after the thaw, the frozen master's keys come back to Redis once its breaker probes
      await("the frozen master's keys decided on Redis again",
          () -> Timed.of(store, onFrozen.get(0)).fromRedis());
      for (String t : all) {
        assertThat(Timed.of(store, t).fromRedis()).as("after the thaw, %s", t).isTrue();
      }
      await("every breaker closed", () -> store.ping() && !store.degraded());
      held.forEach(store::release);
      // the call the fallback admitted still runs: written back to its master, its slot is renewed
      // there until it is released
      store.release(asyncOnFrozen);
      assertThat(((GuardedRedisStore) store).renewedCalls()).isZero();
    }
  }

  @Test
  void eachMasterHasItsOwnHealthAndAStandaloneServerOne() {
    try (RedisRateLimitStore store = store(FailurePolicy.FAIL_CLOSED).build();
        RedisRateLimitStore standalone = TestRedis.standalone(new ManualTicker()).build()) {
      RedisMasters masters = ((GuardedRedisStore) store).lua().masters();
      awaitTopology(masters);
      assertThat(masters.current()).hasSize(MASTERS).doesNotContain(masters.single());
      List<Integer> ports = new ArrayList<>();
      for (int n = 0; n < MASTERS; n++) {
        RedisMasters.Master m = masters.forKey("{" + tenantsOn(n, 1).get(0) + "}");
        assertThat(masters.forKey("x{" + tenantsOn(n, 2).get(1) + "}y")).isSameAs(m);
        assertThat(m.replies()).isNotSameAs(masters.single().replies());
        assertThat(m.breaker()).isNotSameAs(masters.single().breaker());
        ports.add(Integer.parseInt(m.name().substring(m.name().lastIndexOf(':') + 1)));
      }
      assertThat(ports).containsExactlyElementsOf(nodes.stream().map(RedisServer::port).toList());
      assertThat(masters.current()).containsExactlyInAnyOrderElementsOf(List.of(
          masters.forKey("{" + tenantsOn(0, 1).get(0) + "}"),
          masters.forKey("{" + tenantsOn(1, 1).get(0) + "}"),
          masters.forKey("{" + tenantsOn(2, 1).get(0) + "}")));
      assertThat(store.ping()).isTrue();

      RedisMasters one = ((GuardedRedisStore) standalone).lua().masters();
      assertThat(one.current()).containsExactly(one.single());
      assertThat(one.forKey("{a}")).isSameAs(one.single());
      assertThat(one.forKey("{b}")).isSameAs(one.single());
      assertThat(one.forSlot(SlotHash.getSlot("c"))).isSameAs(one.single());
    }
  }

  /**
   * Waits for the store's cluster connection, which opens in the background: until it has read
   * the Cluster's topology every key maps to the one shared state.
   */
  private static void awaitTopology(RedisMasters masters) {
    await("the Cluster's topology read", () -> masters.current().size() == MASTERS);
  }

  /** The index in {@link #nodes} of a master, from its name (its address). */
  private static int masterIndex(RedisMasters masters, RedisMasters.Master master) {
    int port = Integer.parseInt(master.name().substring(master.name().lastIndexOf(':') + 1));
    for (int n = 0; n < MASTERS; n++) {
      if (nodes.get(n).port() == port) {
        return n;
      }
    }
    throw new IllegalStateException("no node on port " + port + " among " + masters.current());
  }

  private static long keysOn(RedisServer node, String pattern) {
    RedisClient client = RedisClient.create(node.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      return c.sync().keys(pattern).size();
    } finally {
      client.shutdown();
    }
  }

  private static StoreAdministration admin(RedisRateLimitStore store) {
    return store.administration().orElseThrow();
  }

  /**
   * Waits (at most 10 s) for a condition that needs real Redis time: a fresh Cluster warm, a
   * probe after the thaw.
   */
  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("not within 10 s: " + what);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
  }
}
