package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

class UpstreamWaitingRoomTests {

  private static final String UP = "openai-main";
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final ManualScheduler scheduler = new ManualScheduler(new ManualTicker());
  private final Gate gate = new Gate();
  /** How each wait ended: tenant, ending and milliseconds waited. */
  private final List<String> endings = new ArrayList<>();
  private UpstreamWaitingRoom room = room(1000);

  private UpstreamWaitingRoom room(int maxWaiters) {
    return new UpstreamWaitingRoom(scheduler.ticker(), scheduler, maxWaiters,
        Duration.ofMinutes(1), (call, ending, waitedNanos) ->
            endings.add(call.tenant() + " " + ending + " " + waitedNanos / 1_000_000));
  }

  /** One attempt's result: which call, which attempt of it, and the decision. */
  record Result(String call, int attempt, Decision decision) {}

  /**
   * An upstream stand-in that admits while it has permits and denies with a fixed retry
   * otherwise; it records every attempt and admission.
   */
  final class Gate {
    int permits;
    long retryAfterMs = 100;
    final List<String> attempts = new ArrayList<>();
    final List<String> admitted = new ArrayList<>();
    final List<Result> abandoned = new ArrayList<>();

    synchronized Result decide(String call) {
      attempts.add(call);
      int n = (int) attempts.stream().filter(call::equals).count();
      if (permits > 0) {
        permits--;
        admitted.add(call);
        return new Result(call, n, Decision.allow(0, 0, "upstream:" + UP));
      }
      return new Result(call, n, Decision.retryableDeny(
          Reason.UPSTREAM_LIMIT, 0, retryAfterMs, retryAfterMs, "upstream:" + UP));
    }

    synchronized int attemptsOf(String call) {
      return (int) attempts.stream().filter(call::equals).count();
    }

    Attempt attempt(String call) {
      return new Attempt(call);
    }

    /** Frees {@code n} permits and tells the room. */
    void free(int n) {
      synchronized (this) {
        permits += n;
      }
      room.capacityMayHaveFreed(UP);
    }

    final class Attempt implements UpstreamWaitingRoom.Attempt<Result> {
      final String call;

      Attempt(String call) {
        this.call = call;
      }

      @Override
      public CompletionStage<Result> attempt() {
        return CompletableFuture.completedFuture(decide(call));
      }

      @Override
      public Decision decision(Result result) {
        return result.decision();
      }

      @Override
      public Result denied(long retryAfterMs) {
        return new Result(call, 0, Decision.retryableDeny(
            Reason.UPSTREAM_LIMIT, 0, retryAfterMs, retryAfterMs, "upstream:" + UP));
      }

      @Override
      public void abandon(Result admitted) {
        synchronized (Gate.this) {
          abandoned.add(admitted);
        }
      }
    }
  }

  private static UpstreamWaitingRoom.Call call(String tenant) {
    return call(tenant, 1, 1, 100, WAIT);
  }

  private static UpstreamWaitingRoom.Call call(
      String tenant, double weight, int priority, long estimate, Duration maxWait) {
    return new UpstreamWaitingRoom.Call(UP, tenant, weight, priority, estimate, maxWait);
  }

  private CompletableFuture<Result> await(String id, UpstreamWaitingRoom.Call call) {
    return room.await(call, gate.attempt(id)).toCompletableFuture();
  }

  @Test
  void aCallNoOneWaitsAheadOfIsDecidedAtOnceAndCounted() {
    gate.permits = 1;
    CompletableFuture<Result> a = await("a1", call("a", 2, 1, 300, WAIT));

    assertThat(a).isCompleted();
    assertThat(a.join().decision().allowed()).isTrue();
    assertThat(room.waiting(UP)).isZero();
    assertThat(room.counter(UP, "a")).isEqualTo(150.0); // 300 tokens / weight 2
    assertThat(endings).isEmpty(); // it never waited
  }

  @Test
  void aDeniedCallIsTriedAgainAtTheUpstreamsRetryTimeAndNotBefore() {
    CompletableFuture<Result> a = await("a1", call("a"));
    assertThat(a).isNotDone();
    assertThat(room.waiting(UP)).isEqualTo(1);

    gate.permits = 1; // freed silently: only the retry time finds it
    scheduler.advanceMillis(99);
    assertThat(gate.attemptsOf("a1")).isEqualTo(1);
    assertThat(a).isNotDone();

    scheduler.advanceMillis(1);
    assertThat(gate.attemptsOf("a1")).isEqualTo(2);
    assertThat(a.join().decision().allowed()).isTrue();
    assertThat(room.waiting(UP)).isZero();
    assertThat(scheduler.pending()).isZero(); // the deadline's timer went with the call
    assertThat(endings).containsExactly("a ADMITTED 100");
  }

  @Test
  void aSignalTriesTheFirstCallAtOnce() {
    CompletableFuture<Result> a = await("a1", call("a"));

    gate.free(1);

    assertThat(a.join().decision().allowed()).isTrue();
    assertThat(gate.attemptsOf("a1")).isEqualTo(2);
  }

  @Test
  void theLeastWeightedCounterGoesFirstTiesByArrivalAndATenantsCallsInOrder() {
    List<CompletableFuture<Result>> all = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      all.add(await("a" + i, call("a", 1, 1, 100, WAIT)));
    }
    for (int i = 1; i <= 3; i++) {
      all.add(await("b" + i, call("b", 2, 1, 100, WAIT)));
    }
    gate.admitted.clear();

    for (int i = 0; i < 6; i++) {
      gate.free(1);
    }

    // a1 (a=100), b1 (b=50), b2 (b=100), a2 on the tie (its head came first), b3, a3
    assertThat(gate.admitted).containsExactly("a1", "b1", "b2", "a2", "b3", "a3");
    assertThat(all).allMatch(f -> f.join().decision().allowed());
    assertThat(room.counter(UP, "a")).isEqualTo(300.0);
    assertThat(room.counter(UP, "b")).isEqualTo(150.0);
  }

  @Test
  void onlyTheFirstCallIsTriedThenTheNextWhileTheyAreAdmitted() {
    await("a1", call("a"));
    await("b1", call("b"));
    await("c1", call("c"));

    gate.free(2);

    assertThat(gate.admitted).containsExactly("a1", "b1");
    assertThat(gate.attemptsOf("c1")).isEqualTo(1); // tried once more after b1, denied
    assertThat(room.waiting(UP)).isEqualTo(1);
  }

  @Test
  void aTenantThatBecomesBackloggedIsLiftedToTheLeastBackloggedCounter() {
    await("a1", call("a"));
    await("a2", call("a"));
    await("b1", call("b"));
    gate.free(1); // a1: a=100, b=0
    gate.free(1); // b1: b=100, b leaves the backlog
    assertThat(room.counter(UP, "a")).isEqualTo(100.0);

    room.admitted(UP, "a", 1, 1, 200); // a served elsewhere meanwhile: a=300, still backlogged
    await("c1", call("c")); // idle c (0) is lifted to the least backlogged counter, a's

    assertThat(room.counter(UP, "c")).isEqualTo(300.0);
    gate.free(1); // a2 first on the tie (its head came first)
    assertThat(gate.admitted).endsWith("a2");
  }

  @Test
  void aTenantServedWhileOthersWaitedKeepsItsCounterWhenItWaitsToo() {
    await("a1", call("a"));
    await("a2", call("a"));
    room.admitted(UP, "heavy", 1, 1, 5_000); // lifted to a's 0, then served
    await("h1", call("heavy"));

    gate.free(2);

    assertThat(room.counter(UP, "heavy")).isEqualTo(5_000.0);
    assertThat(gate.admitted).containsExactly("a1", "a2");
  }

  @Test
  void aCallAdmittedWhileNoOneWaitsPassesThroughTheOrderAtOnce() {
    room.admitted(UP, "a", 1, 1, 1_000);
    room.admitted(UP, "b", 1, 1, 100); // lifted to a's 1,000 as the last to leave

    assertThat(room.counter(UP, "b")).isEqualTo(1_100.0);
    room.admitted(UP, "c", 1, 2, 100); // another class: its own floor
    assertThat(room.counter(UP, "c")).isEqualTo(100.0);
  }

  @Test
  void withNoTenantBackloggedANewOneIsLiftedToTheLastThatLeft() {
    await("a1", call("a"));
    room.admitted(UP, "a", 1, 1, 400); // a=400 while it waits
    gate.free(1); // a1 admitted: a=500, leaves; nobody waits

    await("b1", call("b")); // b's first attempt is denied, then it waits

    assertThat(room.counter(UP, "b")).isEqualTo(500.0);
  }

  @Test
  void aLowerPriorityClassGoesFirstWhateverItsCounter() {
    room.admitted(UP, "gold", 1, 0, 10_000);
    await("s1", call("silver", 1, 1, 100, WAIT));
    await("g1", call("gold", 1, 0, 100, WAIT));

    gate.free(1);

    assertThat(gate.admitted).containsExactly("g1");
  }

  @Test
  void anArrivalWhileOthersWaitJoinsTheOrderInsteadOfBeingDecidedAhead() {
    CompletableFuture<Result> a = await("a1", call("a"));
    gate.permits = 1; // capacity frees, no signal yet

    CompletableFuture<Result> b = await("b1", call("b"));

    assertThat(gate.attemptsOf("b1")).isZero();
    assertThat(b).isNotDone();
    gate.free(0);
    assertThat(a.join().decision().allowed()).isTrue();
    assertThat(b).isNotDone();
  }

  @Test
  void signalsDuringAnAttemptInFlightMakeOneMoreAttemptAfterIt() {
    List<CompletableFuture<Result>> inFlight = new ArrayList<>();
    UpstreamWaitingRoom.Attempt<Result> slow = new UpstreamWaitingRoom.Attempt<>() {
      @Override
      public CompletionStage<Result> attempt() {
        CompletableFuture<Result> f = new CompletableFuture<>();
        inFlight.add(f);
        return f;
      }

      @Override
      public Decision decision(Result result) {
        return result.decision();
      }

      @Override
      public Result denied(long retryAfterMs) {
        throw new AssertionError("never refused");
      }

      @Override
      public void abandon(Result admitted) {
        throw new AssertionError("never left");
      }
    };
    CompletableFuture<Result> a = room.await(call("a"), slow).toCompletableFuture();
    inFlight.get(0).complete(gate.decide("a1")); // denied: waits
    room.capacityMayHaveFreed(UP);
    assertThat(inFlight).hasSize(2);

    room.capacityMayHaveFreed(UP);
    room.capacityMayHaveFreed(UP); // both while the second attempt is in flight
    assertThat(inFlight).hasSize(2);
    inFlight.get(1).complete(gate.decide("a1"));

    assertThat(inFlight).hasSize(3); // one more, right after
    inFlight.get(2).complete(gate.decide("a1"));
    assertThat(inFlight).hasSize(3); // then the retry time
    assertThat(a).isNotDone();
    gate.permits = 1;
    scheduler.advanceMillis(100);
    inFlight.get(3).complete(gate.decide("a1"));
    assertThat(a.join().decision().allowed()).isTrue();
  }

  @Test
  void aSignalForAnUpstreamNoCallWaitsForDoesNothing() {
    room.capacityMayHaveFreed("unknown");
    gate.permits = 1;
    await("a1", call("a"));
    room.capacityMayHaveFreed(UP);

    assertThat(gate.attempts).containsExactly("a1");
    assertThat(room.waiting("unknown")).isZero();
  }

  @Test
  void aCallerWithAFirstDenyForAnotherReasonOrNoWaitGetsItBackAtOnce() {
    Result own = new Result("a1", 1,
        Decision.retryableDeny(Reason.TPM_LIMIT, 0, 1_000, 1_000, "tenant"));
    assertThat(room.await(call("a"), own, gate.attempt("a1")).toCompletableFuture().join())
        .isEqualTo(own);
    Result upstream = gate.decide("b1");
    assertThat(room.await(call("b", 1, 1, 100, Duration.ZERO), upstream, gate.attempt("b1"))
        .toCompletableFuture().join()).isEqualTo(upstream);
    assertThat(room.waiting(UP)).isZero();
    assertThat(gate.attempts).containsExactly("b1");
  }

  @Test
  void aCallWhoseLongestWaitPassesGetsItsLastDeny() {
    gate.retryAfterMs = 300;
    CompletableFuture<Result> a = await("a1", call("a", 1, 1, 100, Duration.ofSeconds(1)));

    scheduler.advanceMillis(999);
    assertThat(a).isNotDone();
    assertThat(gate.attemptsOf("a1")).isEqualTo(4); // at 0, 300, 600, 900 ms
    scheduler.advanceMillis(1);

    assertThat(a).isCompleted();
    assertThat(a.join().decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(a.join().attempt()).isEqualTo(4);
    assertThat(room.waiting(UP)).isZero();
    assertThat(gate.attemptsOf("a1")).isEqualTo(4);
    assertThat(endings).containsExactly("a TIMED_OUT 1000");
  }

  @Test
  void aCallNeverTriedGetsADenyWithTheTimeUntilTheUpstreamsNextRetry() {
    gate.retryAfterMs = 5_000;
    await("a1", call("a", 1, 1, 100, Duration.ofSeconds(10)));
    scheduler.advanceMillis(1_000);
    CompletableFuture<Result> b = await("b1", call("b", 1, 1, 100, Duration.ofSeconds(1)));

    scheduler.advanceMillis(1_000);

    assertThat(b.join().attempt()).isZero(); // made by denied(), never tried
    assertThat(b.join().decision().retryAfterMs()).isEqualTo(3_000); // a1's retry at 5 s
    assertThat(gate.attemptsOf("b1")).isZero();
  }

  @Test
  void aCancelledCallLeavesAtOnceAndIsNeverTriedAgain() {
    CompletableFuture<Result> a = await("a1", call("a"));
    CompletableFuture<Result> b = await("b1", call("b"));

    a.cancel(true);

    assertThat(room.waiting(UP)).isEqualTo(1);
    gate.free(1);
    assertThat(gate.attemptsOf("a1")).isEqualTo(1);
    assertThat(b.join().decision().allowed()).isTrue();
    assertThat(room.waiting(UP)).isZero();
    assertThat(scheduler.pending()).isZero();
    assertThat(endings).containsExactly("a CANCELLED 0", "b ADMITTED 0");
  }

  @Test
  void anAdmissionForACallCancelledWhileItsAttemptWasInFlightIsGivenBack() {
    CompletableFuture<Result> late = new CompletableFuture<>();
    List<Result> abandoned = new ArrayList<>();
    UpstreamWaitingRoom.Attempt<Result> slow = new UpstreamWaitingRoom.Attempt<>() {
      int n;

      @Override
      public CompletionStage<Result> attempt() {
        return n++ == 0 ? CompletableFuture.completedFuture(gate.decide("a1")) : late;
      }

      @Override
      public Decision decision(Result result) {
        return result.decision();
      }

      @Override
      public Result denied(long retryAfterMs) {
        throw new AssertionError("never refused");
      }

      @Override
      public void abandon(Result admitted) {
        abandoned.add(admitted);
      }
    };
    CompletableFuture<Result> a = room.await(call("a"), slow).toCompletableFuture();
    room.capacityMayHaveFreed(UP); // the second attempt is in flight

    a.cancel(true);
    assertThat(room.waiting(UP)).isZero();
    Result admitted = new Result("a1", 2, Decision.allow(0, 0, "upstream:" + UP));
    late.complete(admitted);

    assertThat(abandoned).containsExactly(admitted);
    assertThat(room.counter(UP, "a")).isZero();
  }

  @Test
  void aCallWhoseLongestWaitPassesWhileItsAttemptIsInFlightTakesThatAttemptsAnswer() {
    CompletableFuture<Result> late = new CompletableFuture<>();
    UpstreamWaitingRoom.Attempt<Result> slow = new UpstreamWaitingRoom.Attempt<>() {
      int n;

      @Override
      public CompletionStage<Result> attempt() {
        return n++ == 0 ? CompletableFuture.completedFuture(gate.decide("a1")) : late;
      }

      @Override
      public Decision decision(Result result) {
        return result.decision();
      }

      @Override
      public Result denied(long retryAfterMs) {
        throw new AssertionError("it was tried");
      }

      @Override
      public void abandon(Result admitted) {
        throw new AssertionError("nobody left");
      }
    };
    CompletableFuture<Result> a =
        room.await(call("a", 1, 1, 100, Duration.ofMillis(50)), slow).toCompletableFuture();
    room.capacityMayHaveFreed(UP);
    scheduler.advanceMillis(50);
    assertThat(a).isNotDone();

    Result admitted = new Result("a1", 2, Decision.allow(0, 0, "upstream:" + UP));
    late.complete(admitted);

    assertThat(a.join()).isEqualTo(admitted);
  }

  @Test
  void aFullRoomRefusesACallAtOnceOrMakesRoomForATenantWithFewerCalls() {
    room = room(3);
    CompletableFuture<Result> f1 = await("f1", call("flood"));
    CompletableFuture<Result> f2 = await("f2", call("flood"));
    CompletableFuture<Result> f3 = await("f3", call("flood"));

    CompletableFuture<Result> q1 = await("q1", call("quiet")); // flood 3 >= 0 + 2: f3 leaves
    assertThat(f3).isCompleted();
    assertThat(f3.join().decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(room.waiting(UP)).isEqualTo(3);

    CompletableFuture<Result> f4 = await("f4", call("flood")); // flood's own call: refused
    assertThat(f4).isCompleted();
    assertThat(f4.join().attempt()).isZero();
    CompletableFuture<Result> o1 = await("o1", call("other")); // flood 2 >= 0 + 2: f2 leaves
    assertThat(f2).isCompleted();
    CompletableFuture<Result> o2 = await("o2", call("other")); // flood 1 < 1 + 2: refused
    assertThat(o2).isCompleted();

    assertThat(room.waiting(UP)).isEqualTo(3);
    assertThat(List.of(f1, q1, o1)).noneMatch(CompletableFuture::isDone);
    assertThat(gate.attemptsOf("f4") + gate.attemptsOf("o1") + gate.attemptsOf("o2")).isZero();
    assertThat(endings).containsExactly(
        "flood REFUSED 0", "flood REFUSED 0", "flood REFUSED 0", "other REFUSED 0");
  }

  @Test
  void aCallWithNoWaitIsDecidedAtOnceAndNeverWaits() {
    await("a1", call("a"));
    CompletableFuture<Result> b = await("b1", call("b", 1, 1, 100, Duration.ZERO));

    assertThat(b).isCompleted();
    assertThat(b.join().decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(room.waiting(UP)).isEqualTo(1);
  }

  @Test
  void aCallerWithAFirstDenyJoinsTheOrder() {
    Result first = gate.decide("a1");
    CompletableFuture<Result> a =
        room.await(call("a"), first, gate.attempt("a1")).toCompletableFuture();
    assertThat(room.waiting(UP)).isEqualTo(1);

    gate.permits = 1;
    scheduler.advanceMillis(100);

    assertThat(a.join().decision().allowed()).isTrue();
  }

  @Test
  void aDenyForAnotherReasonEndsTheWaitAndTheNextCallIsTried() {
    await("a1", call("a"));
    Result ownDeny = new Result("c1", 1,
        Decision.retryableDeny(Reason.RPM_LIMIT, 0, 5_000, 5_000, "tenant"));
    CompletableFuture<Result> c = room.await(call("c"), fixed(
        CompletableFuture.completedFuture(ownDeny))).toCompletableFuture();
    CompletableFuture<Result> b = await("b1", call("b"));

    gate.free(1); // a1 admitted; c's own budget now denies it; b1 tried, the upstream says no

    assertThat(c.join()).isEqualTo(ownDeny);
    assertThat(endings).containsExactly("a ADMITTED 0", "c DENIED 0");
    assertThat(gate.attemptsOf("b1")).isEqualTo(1);
    assertThat(b).isNotDone();
    gate.free(1);
    assertThat(b.join().decision().allowed()).isTrue();
  }

  @Test
  void aFailedAttemptFailsItsCallAndTheNextIsTried() {
    await("a1", call("a"));
    CompletableFuture<Result> f = room.await(call("f"), fixed(
        CompletableFuture.failedFuture(new IllegalStateException("store down"))))
        .toCompletableFuture();
    CompletableFuture<Result> b = await("b1", call("b"));

    gate.free(2);

    assertThatThrownBy(f::get).isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(IllegalStateException.class);
    assertThat(b.join().decision().allowed()).isTrue();
    assertThat(endings).containsExactly("a ADMITTED 0", "f FAILED 0", "b ADMITTED 0");
    assertThat(gate.admitted).containsExactly("a1", "b1");
  }

  /** An attempt that always answers {@code answer}. */
  private static UpstreamWaitingRoom.Attempt<Result> fixed(CompletionStage<Result> answer) {
    return UpstreamWaitingRoom.Attempt.of(() -> answer, Result::decision,
        ms -> {
          throw new AssertionError("never refused");
        },
        admitted -> {
          throw new AssertionError("never left");
        });
  }

  @Test
  void settlingCorrectsTheCounterWithTheTokensUsed() {
    gate.permits = 1;
    await("a1", call("a", 2, 1, 1_000, WAIT));
    assertThat(room.counter(UP, "a")).isEqualTo(500.0);

    room.settled(UP, "a", 2, 1_000, 400);

    assertThat(room.counter(UP, "a")).isEqualTo(200.0);
  }

  @Test
  void tenantsNeitherWaitingNorServedForTheMemoryAreForgotten() {
    for (int i = 0; i < 100; i++) {
      room.admitted(UP, "t" + i, 1, 1, 10);
    }
    assertThat(room.tenants(UP)).isEqualTo(100);
    await("w1", call("waiter", 1, 1, 100, Duration.ofMinutes(5)));

    scheduler.advance(Duration.ofMinutes(1));
    room.admitted(UP, "late", 1, 1, 10);

    assertThat(room.tenants(UP)).isEqualTo(2); // the waiter and the late one
    assertThat(room.counter(UP, "t0")).isEqualTo(-1);
  }

  @Test
  void closingEndsEveryWaitAndLaterCallsAreDecidedAtOnce() {
    CompletableFuture<Result> a = await("a1", call("a"));
    CompletableFuture<Result> b = await("b1", call("b", 1, 0, 100, WAIT));

    room.close();

    assertThat(a.join().decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(a.join().attempt()).isEqualTo(1); // its last deny
    assertThat(b.join().attempt()).isZero(); // never tried: a fresh deny
    assertThat(endings).containsExactlyInAnyOrder("a CLOSED 0", "b CLOSED 0");
    assertThat(room.waiting(UP)).isZero();
    assertThat(scheduler.pending()).isZero();
    CompletableFuture<Result> c = await("c1", call("c"));
    assertThat(c).isCompleted();
    assertThat(gate.attemptsOf("c1")).isEqualTo(1);
  }

  @Test
  void invalidArgumentsAreNamed() {
    assertThatThrownBy(() -> call("a", 0, 1, 100, WAIT))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("weight");
    assertThatThrownBy(() -> call("a", 1, 1, -1, WAIT))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("estimate");
    assertThatThrownBy(() -> call("a", 1, 1, 1, Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxWait");
    assertThatThrownBy(() -> new UpstreamWaitingRoom.Call(" ", "a", 1, 1, 1, WAIT))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("upstream");
    assertThatThrownBy(() -> new UpstreamWaitingRoom(scheduler.ticker(), scheduler, 0, WAIT))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxWaitersPerUpstream");
    assertThatThrownBy(() -> room.settled(UP, "a", 1, 1, -1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("actual");
  }
}
