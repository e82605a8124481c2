package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * On a Redis Cluster, an upstream whose slot is not the caller's root's is decided on its own
 * slot, the caller's levels on the root's: a call either side denies is never admitted, and what
 * the upstream charged for a call the caller's levels denied is given back exactly.
 */
class RedisClusterUpstreamTests {

  private final ManualTicker ticker = new ManualTicker();
  private RedisRateLimitStore store;

  @BeforeEach
  void open() {
    store = TestRedis.cluster(ticker).build();
  }

  @AfterEach
  void close() {
    store.close();
  }

  /** Checks that the test's upstream and root keys lie in different slots. */
  private static void acrossSlots(String upstream, String root) {
    assertThat(SlotHash.getSlot("upstream:" + upstream)).isNotEqualTo(SlotHash.getSlot(root));
  }

  @Test
  void aRootCounterAheadOfTheUpstreamsIsPassedAndNothingIsChargedTwice() {
    acrossSlots("gpu", "late");
    Upstream u = new Upstream("gpu", WindowLimit.perMinute(10), null, ConcurrencyLimit.of(5));
    Budget tokens = new Budget("tokens", null, null, ModelTokenLimit.perMinute(1_000), null);
    Consumption call = Consumption.ofCall(10, 0);
    Reservation first = store.reserve(List.of(tokens), List.of("early"), 1, call,
        Composition.SEQUENTIAL, u);
    assertThat(first.decision().allowed()).isTrue();
    ticker.advanceMillis(10_000); // a root counter started now numbers past the upstream's
    Reservation own = store.reserve(List.of(tokens), List.of("late"), 1, call,
        Composition.SEQUENTIAL);
    Reservation second = store.reserve(List.of(tokens), List.of("late"), 1, call,
        Composition.SEQUENTIAL, u);
    assertThat(second.decision().allowed()).isTrue();
    assertThat(second.id()).isGreaterThan(own.id()).isNotEqualTo(first.id());
    assertThat(store.upstreamStatus(u).requestsRemaining())
        .as("the try that met the root's counter was given back").isEqualTo(8);
    assertThat(store.upstreamStatus(u).inFlight()).isEqualTo(2);
    store.release(second);
    assertThat(store.upstreamStatus(u).inFlight()).isEqualTo(1);
    store.reconcile(second, Consumption.ofCall(4, 0));
    assertThat(store.administration().orElseThrow().inspect(tokens, "late").orElseThrow()
        .modelTokensUsed()).isEqualTo(14);
  }

  @Test
  void aCallerDenyGivesTheReportsCountBack() {
    acrossSlots("openai", "k");
    Upstream u = new Upstream("openai", WindowLimit.perMinute(100), null, null);
    Budget key = new Budget("key", WindowLimit.perMinute(1), null);
    store.report(u, new ProviderReport(null, 3L, Duration.ofMinutes(1), null, null, null, null));
    Consumption one = Consumption.ofCall(0, 0);
    assertThat(store.reserve(List.of(key), List.of("k"), 1, one, Composition.SEQUENTIAL, u)
        .decision().allowed()).isTrue();
    Decision denied = store.reserve(List.of(key), List.of("k"), 1, one, Composition.SEQUENTIAL, u)
        .decision();
    assertThat(denied.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(store.upstreamStatus(u).reportedRequestsRemaining()).isEqualTo(2);
    assertThat(store.upstreamStatus(u).requestsRemaining()).isEqualTo(99);
  }

  /**
   * 240 calls of 40 tenants that admit 3 calls each, from 8 threads, against an upstream of 50:
   * at most 50 admitted, no tenant above its 3, and the upstream counts exactly the admitted ones
   * once every give-back is done.
   */
  @Test
  void concurrentCallsNeverOverAdmitAndTheUpstreamCountsExactlyTheAdmitted() throws Exception {
    Upstream u = new Upstream("hot", WindowLimit.perMinute(50), null, null);
    Budget tenant = new Budget("tenant", WindowLimit.perMinute(3), null);
    List<Decision> all = TwoInstances.hammer(store, store, 4, 30, (s, thread, i) ->
        s.reserve(List.of(tenant), List.of("t" + (thread * 30 + i) % 40), 1,
            Consumption.ofCall(0, 0), Composition.RESERVE_COMMIT, u).decision());
    long admitted = all.stream().filter(Decision::allowed).count();
    assertThat(admitted).isBetween(1L, 50L);
    for (int t = 0; t < 40; t++) {
      assertThat(store.administration().orElseThrow().inspect(tenant, "t" + t)
          .map(KeySnapshot::windowUsed).orElse(0L)).isLessThanOrEqualTo(3);
    }
    assertThat(store.upstreamStatus(u).requestsRemaining()).isEqualTo(50 - admitted);
  }
}
