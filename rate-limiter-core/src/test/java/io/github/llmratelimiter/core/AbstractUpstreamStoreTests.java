package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The store test suite for upstreams: a call is decided against the caller's levels and its
 * {@link Upstream} in one atomic step, an upstream deny charges nothing anywhere, every key and
 * policy shares the upstream's state, and a {@link ProviderReport} corrects it. Every store that
 * keeps upstreams must pass it unchanged, on the driven clock of {@link StoreTckSupport}.
 */
public abstract class AbstractUpstreamStoreTests extends StoreTckSupport {

  /** An organisation level with a window, a bucket that never refills and model tokens. */
  private static final Budget ORG = new Budget("org", WindowLimit.perMinute(20),
      new BucketLimit(20, 0), ModelTokenLimit.perMinute(100_000));

  /** A key level with a window, a bucket and model tokens. */
  private static final Budget KEY = new Budget("key", WindowLimit.perMinute(10),
      new BucketLimit(10, 0.1), ModelTokenLimit.perMinute(50_000));

  private static final List<Budget> LEVELS = List.of(ORG, KEY);

  private static Upstream rpm(String name, long limit) {
    return new Upstream(name, WindowLimit.perMinute(limit), null, null);
  }

  private static Upstream tpm(String name, long limit) {
    return new Upstream(name, null, ModelTokenLimit.perMinute(limit), null);
  }

  private Reservation call(String key, long tokens, Composition mode, Upstream u) {
    return store.reserve(LEVELS, List.of("acme", key), 1, Consumption.ofCall(tokens, 0), mode, u);
  }

  /** A call that waits in the upstream's order: its turn names its waiting call. */
  private Reservation waitingCall(String key, Composition mode, Upstream u) {
    return store.reserve(LEVELS, List.of("acme", key), 1, Consumption.ofCall(0, 0), mode, u,
        new UpstreamTurn(key, 1, 0, 0, "waiting-" + key));
  }

  private Reservation call(String key, long tokens, Composition mode) {
    return store.reserve(LEVELS, List.of("acme", key), 1, Consumption.ofCall(tokens, 0), mode);
  }

  private Reservation call(Budget b, String key, Composition mode, Upstream u) {
    return store.reserve(List.of(b), List.of(key), 1, Consumption.ofCall(0, 0), mode, u);
  }

  private List<KeySnapshot> snapshots(String key) {
    return List.of(admin().inspect(ORG, "acme").orElseThrow(),
        admin().inspect(KEY, key).orElseThrow());
  }

  private UpstreamStatus status(Upstream u) {
    return store.upstreamStatus(u);
  }

  private static ProviderReport remainingRequests(long remaining, Duration reset) {
    return new ProviderReport(null, remaining, reset, null, null, null, null);
  }

  private static ProviderReport remainingTokens(long remaining, Duration reset) {
    return new ProviderReport(null, null, null, null, remaining, reset, null);
  }

  private static ProviderReport limits(@Nullable Long requests, @Nullable Long tokens) {
    return new ProviderReport(requests, null, null, tokens, null, null, null);
  }

  private static void assertUpstreamDeny(Decision d, Upstream u, long retryMs) {
    assertThat(d.allowed()).as(d.toString()).isFalse();
    assertThat(d.reason()).as(d.toString()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(d.level()).isEqualTo(u.budget().name());
    assertThat(d.retryable()).isTrue();
    assertThat(d.retryAfterMs()).as(d.toString()).isEqualTo(retryMs);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aFullUpstreamDeniesWithItsExactWaitAndChargesNothingAtAnyLevel(Composition mode) {
    Upstream u = rpm("openai", 2);
    assertThat(call("k", 100, mode, u).decision().allowed()).isTrue();
    ticker.advanceMillis(10_000);
    assertThat(call("k", 100, mode, u).decision().allowed()).isTrue();
    ticker.advanceMillis(10_000);
    List<KeySnapshot> before = snapshots("k");
    Reservation denied = call("k", 100, mode, u);
    assertUpstreamDeny(denied.decision(), u, 40_000); // until the first call leaves the window
    assertThat(denied.id()).isZero();
    assertThat(denied.reserved()).isFalse();
    assertThat(denied.holdsSlots()).isFalse();
    assertThat(snapshots("k")).as("no level charged: window, bucket, model tokens").isEqualTo(before);
    // a follow-up call without the upstream finds the key's budgets as they were: 8 of 10 left
    for (int i = 0; i < 8; i++) {
      assertThat(call("k", 100, mode).decision().allowed()).isTrue();
    }
    Decision full = call("k", 100, mode).decision();
    assertThat(full.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(full.level()).isEqualTo("key");
    assertThat(status(u).requestsRemaining()).as("the upstream counted only its own 2").isZero();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void theUpstreamsWaitIsExact(Composition mode) {
    Upstream u = rpm("openai", 1);
    assertThat(call("k", 0, mode, u).decision().allowed()).isTrue();
    ticker.advanceMillis(25_000);
    assertUpstreamDeny(call("k", 0, mode, u).decision(), u, 35_000);
    ticker.advanceMillis(34_999);
    assertUpstreamDeny(call("k", 0, mode, u).decision(), u, 1);
    assertThat(snapshots("k").get(1).windowUsed()).as("one admitted call, no deny charged")
        .isEqualTo(1);
    ticker.advanceMillis(1);
    assertThat(call("k", 0, mode, u).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aTenantDenyIsTheDenyWithoutAnUpstreamAndLeavesTheUpstreamUntouched(Composition mode) {
    // the key level admits 1 a minute; the org level runs first (charged by a sequential deny)
    Budget org = new Budget("org", WindowLimit.perMinute(10), new BucketLimit(10, 0));
    Budget key = new Budget("key", WindowLimit.perMinute(1), null);
    List<Budget> levels = List.of(org, key);
    Upstream u = new Upstream("openai", WindowLimit.perMinute(2), null, ConcurrencyLimit.of(5));
    Consumption one = Consumption.ofCall(0, 0);
    Reservation a1 = store.reserve(levels, List.of("oa", "a"), 1, one, mode, u);
    Reservation b1 = store.reserve(levels, List.of("ob", "b"), 1, one, mode);
    assertThat(a1.decision().allowed()).isTrue();
    assertThat(b1.decision().allowed()).isTrue();
    ticker.advanceMillis(3_000);
    Reservation withUpstream = store.reserve(levels, List.of("oa", "a"), 1, one, mode, u);
    Reservation without = store.reserve(levels, List.of("ob", "b"), 1, one, mode);
    assertThat(withUpstream.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(withUpstream.decision()).isEqualTo(without.decision());
    assertThat(withUpstream.levels()).isEqualTo(without.levels());
    assertThat(withUpstream.components()).isEqualTo(without.components());
    assertThat(withUpstream.id()).isZero();
    assertThat(admin().inspect(org, "oa")).isEqualTo(admin().inspect(org, "ob").map(s ->
        new KeySnapshot(s.budget(), "oa", s.windowUsed(), s.windowLimit(), s.tokens(),
            s.capacity(), s.nextFreeMs(), s.modelTokensUsed(), s.modelTokenLimit(), s.inFlight(),
            s.concurrencyLimit())));
    UpstreamStatus s = status(u);
    assertThat(s.requestsRemaining()).as("only the admitted call counts").isEqualTo(1);
    assertThat(s.inFlight()).isEqualTo(1);
    // the upstream's second request is still free for another tenant, then it is full
    assertThat(store.reserve(levels, List.of("oc", "c"), 1, one, mode, u).decision().allowed())
        .isTrue();
    assertUpstreamDeny(store.reserve(levels, List.of("od", "d"), 1, one, mode, u).decision(), u,
        57_000);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aTenantDenyComesBeforeAFullUpstream(Composition mode) {
    Budget key = new Budget("key", WindowLimit.perMinute(1), null);
    Upstream u = rpm("openai", 1);
    assertThat(call(key, "k", mode, u).decision().allowed()).isTrue();
    Decision d = call(key, "k", mode, u).decision();
    assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(d.level()).isEqualTo("key");
  }

  @Test
  void everyKeyAndPolicyShareTheUpstream() {
    Budget free = new Budget("free", WindowLimit.perMinute(5), null);
    Budget pro = new Budget("pro", WindowLimit.perMinute(500), new BucketLimit(100, 10));
    Upstream u = rpm("shared", 3);
    assertThat(call(free, "t1", Composition.SEQUENTIAL, u).decision().allowed()).isTrue();
    assertThat(call(pro, "t2", Composition.RESERVE_COMMIT, u).decision().allowed()).isTrue();
    ticker.advanceMillis(1_000);
    assertThat(call(free, "t3", Composition.RESERVE_COMMIT, u).decision().allowed()).isTrue();
    ticker.advanceMillis(1_000);
    assertUpstreamDeny(call(pro, "t4", Composition.SEQUENTIAL, u).decision(), u, 58_000);
    assertUpstreamDeny(call(free, "t5", Composition.RESERVE_COMMIT, u).decision(), u, 58_000);
    assertThat(admin().inspect(pro, "t4").map(s -> s.windowUsed() + " " + s.tokens())
        .orElse("untracked")).as("nothing charged").isIn("untracked", "0 100.0");
    // another upstream is another state
    assertThat(call(free, "t1", Composition.SEQUENTIAL, rpm("other", 3)).decision().allowed())
        .isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void anAdmittedCallCarriesTheUpstreamAsItsLastLevel(Composition mode) {
    Upstream u = new Upstream("azure", WindowLimit.perMinute(5), ModelTokenLimit.perMinute(1_000),
        ConcurrencyLimit.of(2));
    Reservation r = call("k", 100, mode, u);
    assertThat(r.decision().allowed()).isTrue();
    assertThat(r.levels()).containsExactly(ORG, KEY, u.budget());
    assertThat(r.keys()).containsExactly("acme", "k", "azure");
    assertThat(r.reserved()).isTrue();
    assertThat(r.holdsSlots()).isTrue();
    assertThat(r.estimate()).isEqualTo(100);
    assertThat(r.remainingModelTokens()).as("the upstream binds: 900 left").isEqualTo(900);
    Reservation async = store.reserveAsync(LEVELS, List.of("acme", "k"), 1,
        Consumption.ofCall(100, 0), mode, u).toCompletableFuture().join();
    assertThat(async.decision().allowed()).isTrue();
    assertThat(async.remainingModelTokens()).isEqualTo(800);
    assertThat(status(u).inFlight()).isEqualTo(2);
    assertUpstreamDeny(call("j", 100, mode, u).decision(), u,
        ConcurrencyLimit.DEFAULT_LEASE_TIMEOUT.toMillis());
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void modelTokensAreReservedAndSettledAtTheUpstream(Composition mode) {
    Upstream u = tpm("openai", 1_000);
    Reservation first = call("k", 600, mode, u);
    assertThat(first.decision().allowed()).isTrue();
    assertThat(status(u).modelTokensRemaining()).isEqualTo(400);
    ticker.advanceMillis(5_000);
    List<KeySnapshot> before = snapshots("k");
    assertUpstreamDeny(call("k", 500, mode, u).decision(), u, 55_000);
    assertThat(snapshots("k")).isEqualTo(before);
    store.reconcile(first, Consumption.ofCall(300, 0)); // the call used less than its estimate
    assertThat(status(u).modelTokensRemaining()).isEqualTo(700);
    assertThat(admin().inspect(KEY, "k").orElseThrow().modelTokensUsed()).isEqualTo(300);
    Reservation second = call("k", 500, mode, u);
    assertThat(second.decision().allowed()).isTrue();
    assertThat(status(u).modelTokensRemaining()).isEqualTo(200);
    store.reconcile(second, Consumption.NONE); // the call failed: its whole estimate comes back
    assertThat(status(u).modelTokensRemaining()).isEqualTo(700);
    Reservation third = call("k", 200, mode, u);
    store.reconcile(third, 900); // an under-estimate is charged too
    assertThat(status(u).modelTokensRemaining()).isZero();
    assertUpstreamDeny(call("k", 1, mode, u).decision(), u, 55_000);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void anEstimateAboveTheUpstreamsLimitNeverFits(Composition mode) {
    Upstream u = tpm("small", 1_000);
    Decision d = call("k", 1_001, mode, u).decision();
    assertThat(d.reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(d.level()).isEqualTo(u.budget().name());
    assertThat(d.retryable()).isFalse();
    assertThat(d.retryAfterMs()).isZero();
    assertThat(d.remaining()).isZero();
    assertThat(d.resetAfterMs()).isZero();
    assertThat(admin().inspect(KEY, "k")).as("nothing read, nothing charged").isEmpty();
    assertThat(status(u).modelTokensRemaining()).isEqualTo(1_000);
    // a caller's level that never fits is named first: it comes before the upstream
    Decision tenant = call("k", 60_000, mode, u).decision();
    assertThat(tenant.reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(tenant.level()).isEqualTo("key");
    assertThat(call("k", 1_000, mode, u).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void upstreamSlotsAreTakenReleasedAndExpire(Composition mode) {
    Upstream u = new Upstream("slots", null, null, new ConcurrencyLimit(2, Duration.ofSeconds(30)));
    Reservation a = call("a", 0, mode, u);
    ticker.advanceMillis(4_000);
    Reservation b = call("b", 0, mode, u);
    assertThat(a.holdsSlots()).isTrue();
    assertThat(b.decision().allowed()).isTrue();
    ticker.advanceMillis(1_000);
    assertUpstreamDeny(call("c", 0, mode, u).decision(), u, 25_000); // a's lease, an upper bound
    assertThat(status(u).inFlight()).isEqualTo(2);
    store.release(a);
    store.release(a);
    assertThat(status(u).inFlight()).isEqualTo(1);
    Reservation c = call("c", 0, mode, u);
    assertThat(c.decision().allowed()).isTrue();
    assertUpstreamDeny(call("d", 0, mode, u).decision(), u, 29_000); // b's lease
    ticker.advanceMillis(29_000); // b was never released: its lease expires
    assertThat(call("d", 0, mode, u).decision().allowed()).isTrue();
    assertThat(status(u).inFlight()).isEqualTo(2);
    assertThat(admin().inspect(KEY, "c").orElseThrow().windowUsed())
        .as("the denied call charged nothing at its key").isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void noneRemainingClosesTheUpstreamUntilTheReset(Composition mode) {
    Upstream u = rpm("openai", 100);
    store.report(u, remainingRequests(0, Duration.ofMillis(12_000)));
    assertThat(status(u).closedForMs()).isEqualTo(12_000);
    assertThat(status(u).reportedRequestsRemaining()).isZero();
    ticker.advanceMillis(2_000);
    assertUpstreamDeny(call("k", 0, mode, u).decision(), u, 10_000);
    ticker.advanceMillis(9_999);
    assertUpstreamDeny(call("k", 0, mode, u).decision(), u, 1);
    ticker.advanceMillis(1);
    assertThat(call("k", 0, mode, u).decision().allowed()).isTrue();
    assertThat(status(u).closedForMs()).isZero();
    assertThat(status(u).reportedRequestsRemaining()).isNull();
    assertThat(snapshots("k").get(1).windowUsed()).as("the denies charged nothing").isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void afterACountAtZeroTheFirstCallGoesAloneUntilTheNextReport(Composition mode) {
    Upstream u = rpm("openai", 100);
    store.report(u, remainingRequests(0, Duration.ofMillis(2_000)));
    ticker.advanceMillis(2_000);
    assertThat(call("a", 0, mode, u).decision().allowed()).as("the probe").isTrue();
    assertUpstreamDeny(call("b", 0, mode, u).decision(), u, 1_000);
    ticker.advanceMillis(400);
    assertUpstreamDeny(call("b", 0, mode, u).decision(), u, 600);
    assertThat(status(u).closedForMs()).as("what the reports hold: nothing").isZero();
    store.report(u, remainingRequests(50, Duration.ofSeconds(30))); // the probe's answer
    assertThat(call("b", 0, mode, u).decision().allowed()).isTrue();
    assertThat(call("c", 0, mode, u).decision().allowed()).as("no probe is owed").isTrue();
    assertThat(status(u).reportedRequestsRemaining()).isEqualTo(48);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aProbeThatHearsNothingGoesAloneForAtMostTheProbeTime(Composition mode) {
    Upstream u = rpm("openai", 100);
    store.report(u, new ProviderReport(null, null, null, null, null, null, Duration.ofSeconds(3)));
    ticker.advanceMillis(3_000);
    assertThat(call("a", 0, mode, u).decision().allowed()).as("the probe").isTrue();
    ticker.advanceMillis(Upstream.PROBE.toMillis() - 1);
    assertUpstreamDeny(call("b", 0, mode, u).decision(), u, 1);
    ticker.advanceMillis(1);
    assertThat(call("b", 0, mode, u).decision().allowed()).isTrue();
    assertThat(call("c", 0, mode, u).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void afterTheProviderSaidNothingForTheSilenceTheFirstCallGoesAlone(Composition mode) {
    Upstream u = rpm("openai", 100);
    assertThat(call("a", 0, mode, u).decision().allowed()).isTrue();
    ticker.advanceMillis(Upstream.SILENCE.toMillis() * 3);
    assertThat(call("b", 0, mode, u).decision().allowed())
        .as("no report ever came: no last word to be stale, no probe").isTrue();
    assertThat(call("c", 0, mode, u).decision().allowed()).isTrue();
    store.report(u, remainingRequests(50, Duration.ofSeconds(30)));
    ticker.advanceMillis(Upstream.SILENCE.toMillis() - 1);
    assertThat(call("d", 0, mode, u).decision().allowed()).isTrue();
    assertThat(call("e", 0, mode, u).decision().allowed()).as("not yet silent").isTrue();
    ticker.advanceMillis(1);
    assertThat(call("f", 0, mode, u).decision().allowed()).as("the probe").isTrue();
    assertUpstreamDeny(waitingCall("g", mode, u).decision(), u, Upstream.PROBE.toMillis());
    assertThat(call("x", 0, mode, u).decision().allowed())
        .as("a probe of silence holds back only the calls that wait").isTrue();
    ticker.advanceMillis(Upstream.PROBE.toMillis());
    assertThat(waitingCall("g", mode, u).decision().allowed())
        .as("the probe's time passed; the silence counts from the probe").isTrue();
    assertThat(waitingCall("h", mode, u).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aProbeAfterARetryHoldsBackEveryCallAndTheSilenceProbeEndsWithAReport(Composition mode) {
    Upstream u = rpm("openai", 100);
    store.report(u, new ProviderReport(null, null, null, null, null, null, Duration.ofSeconds(1)));
    ticker.advanceMillis(1_000);
    assertThat(call("a", 0, mode, u).decision().allowed()).as("the probe").isTrue();
    assertUpstreamDeny(call("b", 0, mode, u).decision(), u, 1_000);
    assertUpstreamDeny(waitingCall("c", mode, u).decision(), u, 1_000);
    store.report(u, ProviderReport.EMPTY);
    ticker.advanceMillis(Upstream.SILENCE.toMillis());
    assertThat(waitingCall("d", mode, u).decision().allowed()).as("a probe of silence").isTrue();
    assertUpstreamDeny(waitingCall("e", mode, u).decision(), u, 1_000);
    store.report(u, ProviderReport.EMPTY);
    assertThat(waitingCall("e", mode, u).decision().allowed()).isTrue();
    assertThat(waitingCall("f", mode, u).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aCountAboveZeroOrARetryOfZeroOwesNoProbe(Composition mode) {
    Upstream u = rpm("openai", 100);
    store.report(u, remainingRequests(1, Duration.ofMillis(500)));
    store.report(u, new ProviderReport(null, null, null, null, null, null, Duration.ZERO));
    ticker.advanceMillis(500);
    for (int i = 0; i < 3; i++) {
      assertThat(call("k" + i, 0, mode, u).decision().allowed()).as("call " + i).isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aRemainingCountAdmitsExactlyThatManyUntilItsReset(Composition mode) {
    Upstream u = rpm("openai", 10);
    store.report(u, remainingRequests(2, Duration.ofSeconds(5)));
    assertThat(call("a", 0, mode, u).decision().allowed()).isTrue();
    assertThat(status(u).reportedRequestsRemaining()).isEqualTo(1);
    ticker.advanceMillis(1_000);
    assertThat(call("b", 0, mode, u).decision().allowed()).isTrue();
    assertThat(status(u).reportedRequestsRemaining()).isZero();
    assertThat(status(u).closedForMs()).isEqualTo(4_000);
    assertThat(status(u).requestsRemaining()).as("the window's own count").isEqualTo(8);
    assertUpstreamDeny(call("c", 0, mode, u).decision(), u, 4_000);
    ticker.advanceMillis(4_000);
    // the reset has passed: the window's own limit applies, counting the 2 admitted
    for (int i = 0; i < 8; i++) {
      assertThat(call("c", 0, mode, u).decision().allowed()).as("call " + i).isTrue();
    }
    assertUpstreamDeny(call("c", 0, mode, u).decision(), u, 55_000);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aRemainingTokenCountCapsTheEstimatesUntilItsReset(Composition mode) {
    Upstream u = tpm("openai", 10_000);
    store.report(u, remainingTokens(1_000, Duration.ofSeconds(10)));
    assertThat(call("a", 600, mode, u).decision().allowed()).isTrue();
    assertThat(status(u).reportedTokensRemaining()).isEqualTo(400);
    assertUpstreamDeny(call("b", 500, mode, u).decision(), u, 10_000);
    assertThat(call("b", 400, mode, u).decision().allowed()).isTrue();
    ticker.advanceMillis(10_000);
    assertThat(status(u).reportedTokensRemaining()).isNull();
    assertThat(status(u).modelTokensRemaining()).isEqualTo(9_000);
    assertThat(call("c", 5_000, mode, u).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aLowerReportedLimitHoldsUntilALaterReportSaysOtherwise(Composition mode) {
    Upstream u = rpm("openai", 10);
    store.report(u, limits(3L, null));
    assertThat(status(u).requestsLimit()).isEqualTo(3);
    for (int i = 0; i < 3; i++) {
      assertThat(call("k" + i, 0, mode, u).decision().allowed()).isTrue();
    }
    ticker.advanceMillis(6_000);
    assertUpstreamDeny(call("k", 0, mode, u).decision(), u, 54_000);
    // a report without a limit, and a remaining count without its reset, change nothing
    store.report(u, new ProviderReport(null, 50L, null, null, null, null, null));
    store.report(u, ProviderReport.EMPTY);
    assertThat(status(u).requestsLimit()).isEqualTo(3);
    assertThat(status(u).reportedRequestsRemaining()).isNull();
    ticker.advanceMillis(54_000);
    // the provider said nothing for 54 s: the first call is a probe, which holds back only the
    // calls that wait in the order
    for (int i = 0; i < 3; i++) {
      assertThat(call("k" + i, 0, mode, u).decision().allowed()).isTrue();
    }
    assertUpstreamDeny(call("k", 0, mode, u).decision(), u, 60_000);
    // a later report of a higher limit: the configured one applies again, never above it
    store.report(u, limits(50L, null));
    assertThat(status(u).requestsLimit()).isEqualTo(10);
    for (int i = 0; i < 7; i++) {
      assertThat(call("j" + i, 0, mode, u).decision().allowed()).isTrue();
    }
    assertUpstreamDeny(call("k", 0, mode, u).decision(), u, 60_000);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aLowerReportedTokenLimitHolds(Composition mode) {
    Upstream u = tpm("openai", 1_000);
    store.report(u, limits(null, 500L));
    assertThat(status(u).modelTokensLimit()).isEqualTo(500);
    assertThat(status(u).modelTokensRemaining()).isEqualTo(500);
    assertThat(call("a", 300, mode, u).decision().allowed()).isTrue();
    ticker.advanceMillis(1_000);
    assertUpstreamDeny(call("b", 300, mode, u).decision(), u, 59_000);
    assertThat(call("b", 200, mode, u).decision().allowed()).isTrue();
    store.report(u, limits(null, 2_000L));
    assertThat(status(u).modelTokensLimit()).isEqualTo(1_000);
    assertThat(call("c", 500, mode, u).decision().allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aProvidersRetryClosesTheUpstreamUntilThen(Composition mode) {
    Upstream u = new Upstream("openai", WindowLimit.perMinute(100), ModelTokenLimit.perMinute(
        10_000), ConcurrencyLimit.of(10));
    assertThat(call("a", 10, mode, u).decision().allowed()).isTrue();
    store.report(u, new ProviderReport(null, null, null, null, null, null, Duration.ofSeconds(7)));
    assertThat(status(u).closedForMs()).isEqualTo(7_000);
    List<KeySnapshot> before = snapshots("a");
    ticker.advanceMillis(500);
    assertUpstreamDeny(call("a", 10, mode, u).decision(), u, 6_500);
    assertThat(snapshots("a").get(1).windowUsed()).isEqualTo(before.get(1).windowUsed());
    assertThat(status(u).requestsRemaining()).isEqualTo(99);
    ticker.advanceMillis(6_500);
    assertThat(status(u).closedForMs()).isZero();
    assertThat(call("a", 10, mode, u).decision().allowed()).isTrue();
  }

  @Test
  void aRemainingCountWithoutItsResetIsIgnored() {
    Upstream u = rpm("openai", 5);
    store.report(u, new ProviderReport(null, 0L, null, null, 0L, null, null));
    UpstreamStatus s = status(u);
    assertThat(s.reportedRequestsRemaining()).isNull();
    assertThat(s.reportedTokensRemaining()).isNull();
    assertThat(s.closedForMs()).isZero();
    assertThat(call("k", 100, Composition.SEQUENTIAL, u).decision().allowed()).isTrue();
  }

  @Test
  void theStatusTellsWhereTheUpstreamStands() {
    Upstream u = new Upstream("azure", WindowLimit.perMinute(10),
        ModelTokenLimit.perMinute(1_000), ConcurrencyLimit.of(3));
    assertThat(status(u)).isEqualTo(
        new UpstreamStatus("azure", 10L, 10L, 1_000L, 1_000L, 0, null, null, 0));
    Reservation r = call("k", 200, Composition.SEQUENTIAL, u);
    assertThat(status(u)).isEqualTo(
        new UpstreamStatus("azure", 10L, 9L, 1_000L, 800L, 1, null, null, 0));
    store.report(u, new ProviderReport(8L, 5L, Duration.ofSeconds(20), null, 700L,
        Duration.ofSeconds(30), null));
    call("j", 100, Composition.RESERVE_COMMIT, u);
    ticker.advanceMillis(1_000);
    assertThat(status(u)).isEqualTo(
        new UpstreamStatus("azure", 8L, 6L, 1_000L, 700L, 2, 4L, 600L, 0));
    store.release(r);
    assertThat(status(u).inFlight()).isEqualTo(1);
    Upstream onlySlots = new Upstream("slots", null, null, ConcurrencyLimit.of(1));
    assertThat(status(onlySlots)).isEqualTo(
        new UpstreamStatus("slots", null, null, null, null, 0, null, null, 0));
  }

  @Test
  @Timeout(60) // a store that took the upstream's budget as a level too might lock its entry twice
  void badArgumentsAreRefused() {
    Upstream u = rpm("openai", 5);
    Consumption one = Consumption.ofCall(0, 0);
    List<String> keys = List.of("acme", "k");
    Composition seq = Composition.SEQUENTIAL;
    assertThatIllegalArgumentException().isThrownBy(
        () -> store.reserve(LEVELS, keys, 1, one, seq, null)).withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(
        () -> store.reserve(null, keys, 1, one, seq, u)).withMessageContaining("levels");
    assertThatIllegalArgumentException().isThrownBy(
        () -> store.reserve(LEVELS, null, 1, one, seq, u)).withMessageContaining("keys");
    assertThatIllegalArgumentException().isThrownBy(
        () -> store.reserve(LEVELS, keys, 1, null, seq, u)).withMessageContaining("estimate");
    assertThatIllegalArgumentException().isThrownBy(
        () -> store.reserve(LEVELS, keys, 1, one, null, u)).withMessageContaining("composition");
    assertThatIllegalArgumentException().isThrownBy(
        () -> store.reserveAsync(LEVELS, keys, 1, one, seq, null))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(
        () -> store.reserve(List.of(ORG, u.budget()), List.of("acme", "openai"), 1, one, seq, u))
        .withMessageContaining("upstream:openai");
    assertThatIllegalArgumentException().isThrownBy(
        () -> store.reserve(List.of(rpm("other", 1).budget()), List.of("other"), 1, one, seq, u))
        .withMessageContaining("upstream:other");
    assertThatIllegalArgumentException().isThrownBy(() -> store.report(null, ProviderReport.EMPTY))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(() -> store.report(u, null))
        .withMessageContaining("report");
    assertThatIllegalArgumentException().isThrownBy(() -> store.upstreamStatus(null))
        .withMessageContaining("upstream");
    assertThat(status(u).requestsRemaining()).as("nothing was charged").isEqualTo(5);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void concurrentTenantsAdmitExactlyTheUpstreamsLimit(Composition mode) throws Exception {
    Budget tenant = new Budget("tenant", WindowLimit.perMinute(1_000), new BucketLimit(1_000, 0));
    Upstream u = new Upstream("hot", WindowLimit.perMinute(50), null, null);
    AtomicInteger next = new AtomicInteger();
    List<int[]> admittedByTenant = runConcurrently(8, () -> {
      int[] mine = new int[5];
      int base = next.getAndIncrement() * 5; // five tenants of its own per thread
      for (int i = 0; i < 40; i++) {
        Decision d = call(tenant, "t" + (base + i % 5), mode, u).decision();
        if (d.allowed()) {
          mine[i % 5]++;
        } else {
          assertThat(d.reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
        }
      }
      int[] withBase = new int[6];
      withBase[0] = base;
      System.arraycopy(mine, 0, withBase, 1, 5);
      return withBase;
    });
    int total = 0;
    for (int[] r : admittedByTenant) {
      for (int t = 0; t < 5; t++) {
        total += r[t + 1];
        long used = admin().inspect(tenant, "t" + (r[0] + t)).map(KeySnapshot::windowUsed)
            .orElse(0L);
        assertThat(used).as("tenant t" + (r[0] + t) + " charged for its admitted calls only")
            .isEqualTo(r[t + 1]);
      }
    }
    assertThat(total).isEqualTo(50);
    assertThat(status(u).requestsRemaining()).isZero();
    assertUpstreamDeny(call(tenant, "late", mode, u).decision(), u, 60_000);
  }
}
