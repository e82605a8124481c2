package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;

/**
 * Two independent stores (two gateway instances: separate clients and connections) on one Redis,
 * on the server's clock, share an upstream: many tenants calling through both at once never get
 * more than the upstream's limit admitted, counted exactly, and a provider's report applied
 * through one instance holds for the other.
 */
class SharedRedisUpstreamTests {

  private static final int THREADS_PER_STORE = 4;
  private static final int CALLS_PER_THREAD = 30;
  private static final int TENANTS = 25;
  private static final Budget ORG = new Budget("org", WindowLimit.perMinute(10_000),
      new BucketLimit(10_000, 0));
  private static final Budget TENANT = new Budget("tenant", WindowLimit.perMinute(1_000),
      new BucketLimit(1_000, 0), ModelTokenLimit.perMinute(1_000_000));

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

  /**
   * 240 calls of 25 tenants through both instances (sync and async, both compositions) against an
   * upstream that admits {@code limit} requests and model tokens for as many calls: exactly that
   * many are admitted, the rest denied by the upstream, and each tenant is charged for its
   * admitted calls only.
   */
  @RepeatedTest(20)
  void manyTenantsThroughTwoInstancesGetExactlyTheUpstreamsLimit(RepetitionInfo repetition)
      throws Exception {
    int limit = 40 + 3 * repetition.getCurrentRepetition();
    Upstream u = new Upstream("hot-" + repetition.getCurrentRepetition(),
        new WindowLimit(limit, Duration.ofMinutes(10)),
        new ModelTokenLimit(100L * limit, Duration.ofMinutes(10)), null);
    Composition mode = repetition.getCurrentRepetition() % 2 == 0
        ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT;
    List<Decision> all = hammer((store, thread, i) -> {
      String tenant = "t" + (thread * 7 + i) % TENANTS;
      List<String> keys = List.of("acme", tenant);
      Consumption estimate = Consumption.ofCall(100, 0);
      Reservation r = i % 2 == 0
          ? store.reserve(List.of(ORG, TENANT), keys, 1, estimate, mode, u)
          : store.reserveAsync(List.of(ORG, TENANT), keys, 1, estimate, mode, u)
              .toCompletableFuture().join();
      return r.decision();
    });
    assertThat(all).hasSize(2 * THREADS_PER_STORE * CALLS_PER_THREAD);
    assertThat(all).filteredOn(Decision::allowed).hasSize(limit);
    assertThat(all).filteredOn(d -> !d.allowed())
        .allSatisfy(d -> assertThat(d.reason()).isEqualTo(Reason.UPSTREAM_LIMIT));
    long charged = 0;
    for (int t = 0; t < TENANTS; t++) {
      charged += one.administration().orElseThrow().inspect(TENANT, "t" + t)
          .map(KeySnapshot::windowUsed).orElse(0L);
    }
    assertThat(charged).as("tenants charged for the admitted calls only").isEqualTo(limit);
    assertThat(two.upstreamStatus(u).requestsRemaining()).isZero();
    assertThat(one.upstreamStatus(u).modelTokensRemaining()).isZero();
  }

  @Test
  void slotsOfAnUpstreamAreSharedExactly() throws Exception {
    Upstream u = new Upstream("slots", null, null, new ConcurrencyLimit(17, Duration.ofMinutes(5)));
    List<Decision> all = hammer((store, thread, i) -> store.reserve(List.of(TENANT),
        List.of("t" + i % TENANTS), 1, Consumption.ofCall(0, 0), Composition.SEQUENTIAL, u)
        .decision());
    assertThat(all).filteredOn(Decision::allowed).hasSize(17);
    assertThat(one.upstreamStatus(u).inFlight()).isEqualTo(17);
  }

  @Test
  void aProvidersRetryReportedThroughOneInstanceClosesTheUpstreamForTheOther() {
    Upstream u = new Upstream("openai", WindowLimit.perMinute(100), null, null);
    List<String> keys = List.of("acme", "t1");
    Consumption one0 = Consumption.ofCall(0, 0);
    assertThat(two.reserve(List.of(ORG, TENANT), keys, 1, one0, Composition.SEQUENTIAL, u)
        .decision().allowed()).isTrue();
    one.report(u, new ProviderReport(null, null, null, null, null, null, Duration.ofSeconds(30)));
    Decision d = two.reserve(List.of(ORG, TENANT), keys, 1, one0, Composition.SEQUENTIAL, u)
        .decision();
    assertThat(d.reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(d.retryAfterMs()).isBetween(1L, 30_000L);
    assertThat(two.upstreamStatus(u).closedForMs()).isBetween(1L, 30_000L);
    assertThat(one.administration().orElseThrow().inspect(TENANT, "t1").orElseThrow()
        .windowUsed()).as("the deny charged nothing").isEqualTo(1);
  }

  @Test
  void aRemainingCountReportedThroughOneInstanceHoldsForBoth() throws Exception {
    Upstream u = new Upstream("azure", WindowLimit.perMinute(1_000), null, null);
    two.reportAsync(u, new ProviderReport(null, 9L, Duration.ofMinutes(5), null, null, null, null))
        .toCompletableFuture().join();
    assertThat(one.upstreamStatus(u).reportedRequestsRemaining()).isEqualTo(9);
    List<Decision> all = hammer((store, thread, i) -> store.reserve(List.of(TENANT),
        List.of("t" + i % TENANTS), 1, Consumption.ofCall(0, 0), Composition.RESERVE_COMMIT, u)
        .decision());
    assertThat(all).filteredOn(Decision::allowed).hasSize(9);
    assertThat(one.upstreamStatus(u).reportedRequestsRemaining()).isZero();
    assertThat(two.upstreamStatus(u).closedForMs()).isPositive();
  }

  /** Runs the calls from every thread of both instances at once; returns every decision. */
  private List<Decision> hammer(TwoInstances.Call call) throws Exception {
    return TwoInstances.hammer(one, two, THREADS_PER_STORE, CALLS_PER_THREAD, call);
  }
}
