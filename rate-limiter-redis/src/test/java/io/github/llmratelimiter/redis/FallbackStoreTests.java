package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualClock;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The local fallback's shares: each limit divided among the live instances, continuing from what
 * the instance admitted through Redis, also when an instance joins or leaves. No Redis here.
 */
class FallbackStoreTests {

  private static final Budget TEN = new Budget("rpm", WindowLimit.perMinute(10), null);

  private final ManualTicker ticker = new ManualTicker();

  private static LuaRateLimitStore.Call call(Budget budget, String key, double cost) {
    return new LuaRateLimitStore.Call(List.of(budget), List.of(key), cost, 0, false,
        Composition.SEQUENTIAL, null);
  }

  private static LuaRateLimitStore.Call reserveCall(Budget budget, String key) {
    return new LuaRateLimitStore.Call(List.of(budget), List.of(key), 1, 0, true,
        Composition.SEQUENTIAL, null);
  }

  /** What Redis answered for an admitted call: a reservation Redis numbered, holding what it may. */
  private long redisIds = LuaRateLimitStore.RESERVATION_ID_BASE;

  private Reservation mirror(FallbackStore fallback, LuaRateLimitStore.Call call) {
    boolean numbered = call.reserve() && call.levels().stream()
        .anyMatch(b -> b.concurrency() != null || b.modelTokens() != null);
    Reservation admitted = new Reservation(Decision.allow(0, 0, call.levels().get(0).name()),
        call.levels(), call.keys(), call.estimate(), numbered ? ++redisIds : 0, 0, 0);
    fallback.mirror(call, admitted);
    return admitted;
  }

  private static int admitted(FallbackStore fallback, Budget budget, String key, int calls) {
    int n = 0;
    for (int i = 0; i < calls; i++) {
      if (fallback.decide(call(budget, key, 1)).decision().allowed()) {
        n++;
      }
    }
    return n;
  }

  /** A call of {@code key} on {@code budget} to the upstream {@code u}, as the store plans it. */
  private static LuaRateLimitStore.Call upstreamCall(Budget budget, String key, Upstream u) {
    return new LuaRateLimitStore.Call(List.of(budget, u.budget()), List.of(key, u.name()), 1, 0,
        true, Composition.SEQUENTIAL, null, null, u);
  }

  @Test
  void anUpstreamIsDecidedOnThisInstancesShareAndFollowsTheReports() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1_000)) {
      fallback.instances(2);
      Budget tenant = new Budget("tenant", WindowLimit.perMinute(100), null);
      Upstream u = new Upstream("openai", WindowLimit.perMinute(10), null, null);
      mirror(fallback, upstreamCall(tenant, "a", u)); // admitted through Redis before the outage
      List<Decision> decided = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        decided.add(fallback.decide(upstreamCall(tenant, "t" + i, u)).decision());
      }
      assertThat(decided).filteredOn(Decision::allowed).as("a share of 5, one used through Redis")
          .hasSize(4);
      assertThat(decided).filteredOn(d -> !d.allowed())
          .allSatisfy(d -> assertThat(d.reason()).isEqualTo(Reason.UPSTREAM_LIMIT));
      ticker.advanceMillis(60_000);
      fallback.report(u, new ProviderReport(null, null, null, null, null, null,
          Duration.ofSeconds(5)));
      Decision closed = fallback.decide(upstreamCall(tenant, "t", u)).decision();
      assertThat(closed.reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
      assertThat(closed.retryAfterMs()).isEqualTo(5_000);
      assertThat(fallback.upstreamStatus(u).closedForMs()).isEqualTo(5_000);
      assertThat(fallback.upstreamStatus(u).requestsLimit()).as("this instance's share")
          .isEqualTo(5);
    }
  }

  @Test
  void quotasAreSharedAndContinueFromWhatRedisAdmitted() {
    Budget daily = new Budget("daily", null, null, null, null,
        List.of(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY)), null);
    ManualClock clock = new ManualClock(Instant.parse("2026-01-15T10:00:00Z"));
    try (FallbackStore fallback = new FallbackStore(ticker, clock, 1000)) {
      fallback.instances(2);
      LuaRateLimitStore.Call call = new LuaRateLimitStore.Call(List.of(daily), List.of("q"), 1, 0,
          true, Composition.SEQUENTIAL, null,
          QuotaFrame.of(List.of(daily), Consumption.ofCall(0, 0), clock.millis()));
      mirror(fallback, call);
      mirror(fallback, call);
      List<Reservation> decided = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        decided.add(fallback.decide(call));
      }
      assertThat(decided).extracting(r -> r.decision().reason()).as("a share of 10 / 2, 2 held")
          .containsExactly(Reason.OK, Reason.OK, Reason.OK, Reason.QUOTA_EXCEEDED);
      assertThat(decided.get(2).quotas().get(0).quota().limit()).isEqualTo(5);
      assertThat(decided.get(3).decision().retryAfterMs()).isEqualTo(14 * 3_600_000L);
      fallback.reconcile(decided.get(0), Consumption.NONE); // a failed call: refunded locally
      assertThat(fallback.decide(call).decision().allowed()).isTrue();
      clock.advance(Duration.ofHours(14)); // the next day
      assertThat(fallback.decide(call).quotas().get(0).used()).isEqualTo(1);
    }
  }

  @Test
  void aSingleInstanceContinuesFromWhatRedisAdmitted() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(1);
      for (int i = 0; i < 7; i++) {
        mirror(fallback, call(TEN, "t", 1));
      }
      assertThat(admitted(fallback, TEN, "t", 10)).isEqualTo(3);
    }
  }

  @Test
  void eachOfNInstancesTakesItsShareLessItsOwnAdmissions() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(3);
      mirror(fallback, call(TEN, "t", 1));
      assertThat(admitted(fallback, TEN, "t", 10)).as("floor(10 / 3) - 1").isEqualTo(2);
      assertThat(admitted(fallback, TEN, "fresh", 10)).isEqualTo(3);
    }
  }

  @Test
  void anInstanceJoiningOrLeavingKeepsTheAdmissionsAlreadyCharged() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(2);
      for (int i = 0; i < 4; i++) {
        mirror(fallback, call(TEN, "up", 1));
        mirror(fallback, call(TEN, "down", 1));
      }
      fallback.instances(3); // the share for 3 was charged all along: floor(10 / 3) = 3, 3 held
      assertThat(admitted(fallback, TEN, "up", 10)).isZero();
      fallback.instances(2); // back: the share of 5 holds 4
      assertThat(admitted(fallback, TEN, "down", 10)).isEqualTo(1);
    }
  }

  @Test
  void aCostAboveTheShareButWithinTheLimitIsARetryableDeny() {
    Budget bucket = new Budget("burst", null, new BucketLimit(4, 1));
    try (FallbackStore fallback = new FallbackStore(ticker, 1500)) {
      fallback.instances(2);
      Decision d = fallback.decide(call(bucket, "t", 3)).decision();
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(d.retryable()).isTrue();
      assertThat(d.retryAfterMs()).isEqualTo(1500);
      assertThat(fallback.decide(call(bucket, "t", 2)).decision().allowed()).isTrue();
    }
  }

  @Test
  void beforeTheFirstLiveCountEveryCallIsARetryableDenyButAdmissionsAreKept() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      for (int i = 0; i < 4; i++) {
        mirror(fallback, call(TEN, "t", 1));
      }
      Decision d = fallback.decide(call(TEN, "t", 1)).decision();
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(d.retryable()).isTrue();
      fallback.instances(2);
      assertThat(admitted(fallback, TEN, "t", 10)).as("floor(10 / 2) - 4").isEqualTo(1);
    }
  }

  @Test
  void aShareIsNeverBelowOneCall() {
    Budget one = new Budget("one", WindowLimit.perMinute(1), new BucketLimit(1, 0.5));
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(4);
      assertThat(admitted(fallback, one, "t", 3)).isEqualTo(1);
    }
  }

  @Test
  void aMirroredCallHoldsItsSlotsInTheShareUntilItsRedisReservationIsReleased() {
    Budget slots = new Budget("par", null, null, null, ConcurrencyLimit.of(4));
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(2); // a share of 2 slots
      Reservation first = mirror(fallback, reserveCall(slots, "t"));
      Reservation second = mirror(fallback, reserveCall(slots, "t"));
      assertThat(fallback.mirroredCalls()).isEqualTo(2);
      assertThat(fallback.decide(reserveCall(slots, "t")).decision().reason())
          .isEqualTo(Reason.CONCURRENCY_LIMIT);
      fallback.release(first);
      fallback.release(first); // a second release frees nothing more
      assertThat(fallback.mirroredCalls()).isEqualTo(1);
      Reservation own = fallback.decide(reserveCall(slots, "t"));
      assertThat(own.decision().allowed()).isTrue();
      assertThat(LuaRateLimitStore.fromRedis(own)).isFalse();
      assertThat(fallback.decide(reserveCall(slots, "t")).decision().reason())
          .isEqualTo(Reason.CONCURRENCY_LIMIT);
      fallback.release(own); // the fallback's own reservation, on the share that made it
      assertThat(fallback.decide(reserveCall(slots, "t")).decision().allowed()).isTrue();
      fallback.release(second);
      assertThat(fallback.mirroredCalls()).isZero();
    }
  }

  @Test
  void theSlotsOfMirroredCallsNeverReleasedExpireAndAreForgotten() {
    Budget slots = new Budget("par", null, null, null,
        new ConcurrencyLimit(2, Duration.ofSeconds(1)));
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(1);
      List<Reservation> never = new ArrayList<>();
      for (int i = 0; i < 5_000; i++) {
        never.add(mirror(fallback, reserveCall(slots, "k" + i % 3)));
        ticker.advanceMillis(500);
      }
      assertThat(fallback.mirroredCalls()).as("entries of expired leases dropped").isLessThan(2_100);
      ticker.advanceMillis(1_000);
      assertThat(fallback.decide(reserveCall(slots, "k0")).decision().allowed()).isTrue();
      assertThat(fallback.decide(reserveCall(slots, "k0")).decision().allowed()).isTrue();
    }
  }

  @Test
  void aVariantIsSharedAsAVariantOfTheSharedDefaults() {
    Budget free = new Budget("plan", WindowLimit.perMinute(10), null);
    Budget pro = free.variant(WindowLimit.perMinute(20), null, null, null);
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(2); // shares: free 5, pro 10, over one state
      for (int i = 0; i < 5; i++) {
        mirror(fallback, call(free, "t", 1));
      }
      assertThat(admitted(fallback, free, "t", 10)).isZero();
      assertThat(admitted(fallback, pro, "t", 10)).as("pro's share less what free admitted")
          .isEqualTo(5);
      assertThat(fallback.scaled(pro).defaults()).isEqualTo(fallback.scaled(free));
    }
  }

  @Test
  void aReservationTheShareMadeIsReconciledOnThatShare() {
    Budget perKey = new Budget("per-key", WindowLimit.perMinute(10), null);
    Budget chat = new Budget("chat", WindowLimit.perMinute(5), null,
        io.github.llmratelimiter.core.ModelTokenLimit.perMinute(500));
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(2);
      LuaRateLimitStore.Call call = new LuaRateLimitStore.Call(List.of(perKey, chat),
          List.of("k", "k:m"), 1, 100, true, Composition.SEQUENTIAL, null);
      mirror(fallback, call);
      Reservation own = fallback.decide(call);
      assertThat(own.decision().allowed()).isTrue();
      fallback.reconcile(own, 20);
      assertThat(fallback.store().administration().orElseThrow()
          .inspect(fallback.scaled(chat), "k:m").orElseThrow()
          .modelTokensUsed()).as("the mirrored 100 and the reconciled 20").isEqualTo(120);
    }
  }
}
