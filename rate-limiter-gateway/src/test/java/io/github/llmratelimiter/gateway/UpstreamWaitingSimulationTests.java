package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Three tenants share one upstream that admits 60 requests and 6,000 model tokens a minute; one
 * of them floods at ten times its share. Five minutes of driven time, every call through the
 * waiting room: the quiet tenants get their fair share of the tokens served while all three wait,
 * the flooder never more than its share plus one call, and the upstream stays used.
 */
class UpstreamWaitingSimulationTests {

  private static final String UP = "stand-in";
  private static final long MINUTE = Duration.ofMinutes(1).toNanos();
  private static final long MS = 1_000_000L;
  private static final int RPM = 60;
  private static final long TPM = 6_000;
  /** Every call's estimate: its input and its {@code max_tokens}; it uses 50 to 150 of them. */
  private static final long ESTIMATE = 150;

  private final ManualScheduler scheduler = new ManualScheduler(new ManualTicker());
  private final ManualTicker ticker = scheduler.ticker();
  private final UpstreamWaitingRoom room = new UpstreamWaitingRoom(
      ticker, scheduler, UpstreamWaitingRoom.DEFAULT_MAX_WAITERS, Duration.ofMinutes(1));
  private final Provider provider = new Provider();
  private final Random random = new Random(25);

  /** One call's result as the stand-in gives it. */
  record Result(Decision decision, SlidingMinute.Entry entry) {}

  /** The upstream stand-in: its sliding minute, with the wait until a call would fit. */
  final class Provider {
    private final SlidingMinute minute = new SlidingMinute(RPM, TPM);
    long admitted;
    long tokensUsed;
    long attempts;

    Result decide(long estimate) {
      attempts++;
      long now = ticker.read();
      SlidingMinute.Entry e = minute.accept(now, estimate);
      if (e != null) {
        admitted++;
        return new Result(Decision.allow(0, 0, "upstream:" + UP), e);
      }
      long ms = Math.max(1, (minute.freeAt(estimate) - now + MS - 1) / MS);
      return new Result(Decision.retryableDeny(Reason.UPSTREAM_LIMIT, 0, ms, ms, "upstream:" + UP),
          null);
    }
  }

  /** What one tenant sends and was served. */
  final class Tenant implements Runnable {
    final String name;
    final double weight;
    final long periodNanos;
    long servedSinceBacklogged;
    long countedSinceBacklogged;
    boolean admittedSinceBacklogged;
    long calls;
    long timedOut;

    Tenant(String name, double weight, double callsPerMinute) {
      this.name = name;
      this.weight = weight;
      this.periodNanos = (long) (MINUTE / callsPerMinute);
    }

    @Override
    public void run() { // one arrival, then the next
      if (ticker.read() - start >= DURATION) {
        return;
      }
      calls++;
      long used = 50 + random.nextInt(101);
      UpstreamWaitingRoom.Call call = new UpstreamWaitingRoom.Call(
          UP, name, weight, 1, ESTIMATE, Duration.ofSeconds(30));
      room.await(call, new UpstreamWaitingRoom.Attempt<Result>() {
        @Override
        public CompletionStage<Result> attempt() {
          return CompletableFuture.completedFuture(provider.decide(ESTIMATE));
        }

        @Override
        public Decision decision(Result result) {
          return result.decision();
        }

        @Override
        public Result denied(long retryAfterMs) {
          return new Result(Decision.retryableDeny(
              Reason.UPSTREAM_LIMIT, 0, retryAfterMs, retryAfterMs, "upstream:" + UP), null);
        }

        @Override
        public void abandon(Result admitted) {
          throw new AssertionError("nobody cancels here");
        }
      }).whenComplete((result, failure) -> {
        if (result.decision().allowed()) {
          admittedCall(this, used);
          scheduler.schedule(() -> settle(this, result.entry(), used), 2_000 * MS);
        } else {
          timedOut++;
        }
      });
      startWhenAllWait();
      scheduler.schedule(this, periodNanos);
    }
  }

  private static final long DURATION = Duration.ofMinutes(5).toNanos();
  /** The waiting calls' timeouts (30 s) bound the queues; the measurement starts after. */
  private static final long WARM_UP = Duration.ofSeconds(30).toNanos();
  private final long start = ticker.read();
  private final Map<String, Tenant> tenants = new LinkedHashMap<>();
  /** When every tenant first had a call waiting; 0 before. */
  private long allBacklogged;
  private long servedSinceBacklogged;
  private long countedSinceBacklogged;
  private long worstFloodExcess = Long.MIN_VALUE;
  private long worstFloodExcessUsed = Long.MIN_VALUE;
  private int samplesNotAllBacklogged;

  private void admittedCall(Tenant t, long used) {
    provider.tokensUsed += used;
    if (allBacklogged != 0) {
      t.servedSinceBacklogged += used;
      servedSinceBacklogged += used;
      t.countedSinceBacklogged += ESTIMATE;
      countedSinceBacklogged += ESTIMATE;
      t.admittedSinceBacklogged = true;
      excess();
    }
  }

  private void settle(Tenant t, SlidingMinute.Entry entry, long used) {
    entry.tokens = used;
    if (t.admittedSinceBacklogged) { // a call admitted before counts before
      t.countedSinceBacklogged += used - ESTIMATE;
      countedSinceBacklogged += used - ESTIMATE;
      excess();
    }
    room.settled(UP, t.name, t.weight, ESTIMATE, used);
    room.capacityMayHaveFreed(UP);
  }

  /** How far the flooder is above its share, counted as the room counts and in tokens used. */
  private void excess() {
    Tenant flood = tenants.get("flood");
    double share = flood.weight / tenants.values().stream().mapToDouble(x -> x.weight).sum();
    worstFloodExcess = Math.max(worstFloodExcess,
        flood.countedSinceBacklogged - Math.round(share * countedSinceBacklogged));
    worstFloodExcessUsed = Math.max(worstFloodExcessUsed,
        flood.servedSinceBacklogged - Math.round(share * servedSinceBacklogged));
  }

  private boolean allWait() {
    return tenants.values().stream().allMatch(t -> room.waiting(UP, t.name) > 0);
  }

  /** After every arrival: the measurement starts once all tenants wait, after a warm-up. */
  private void startWhenAllWait() {
    if (allBacklogged == 0 && ticker.read() - start >= WARM_UP && allWait()) {
      allBacklogged = ticker.read();
    }
  }

  /** Once a second after the measurement started: counts the seconds not all tenants wait. */
  private void sample() {
    if (allBacklogged != 0 && !allWait()) {
      samplesNotAllBacklogged++;
    }
    if (ticker.read() - start < DURATION) {
      scheduler.schedule(this::sample, 1_000 * MS);
    }
  }

  private void run(Tenant... all) {
    for (Tenant t : all) {
      tenants.put(t.name, t);
    }
    long phase = 0;
    for (Tenant t : all) {
      scheduler.schedule(t, phase);
      phase += 137 * MS;
    }
    scheduler.schedule(this::sample, 0);
    scheduler.advance(Duration.ofNanos(DURATION));
  }

  @ParameterizedTest(name = "weights quiet {0}, {1}, flood {2}")
  @CsvSource({"1, 1, 1", "2, 1, 1", "1, 1, 2"})
  void quietTenantsGetTheirFairShareAndTheFlooderNoMoreThanItsOwnPlusOneCall(
      double quiet1, double quiet2, double flood) {
    double total = quiet1 + quiet2 + flood;
    double share = RPM / total; // calls a minute of 100 tokens on average
    run(new Tenant("quiet1", quiet1, 2 * share * quiet1),
        new Tenant("quiet2", quiet2, 2 * share * quiet2),
        new Tenant("flood", flood, 10 * share * flood));

    assertThat(allBacklogged - start).isBetween(WARM_UP, WARM_UP + Duration.ofSeconds(5).toNanos());
    assertThat(samplesNotAllBacklogged).isZero();
    for (String name : new String[] {"quiet1", "quiet2"}) {
      Tenant t = tenants.get(name);
      double fair = t.weight / total;
      double got = (double) t.servedSinceBacklogged / servedSinceBacklogged;
      System.out.printf("%s: %.4f of the tokens served while all waited (fair %.4f)%n",
          name, got, fair);
      assertThat(got).isBetween(fair * 0.9, fair * 1.1);
    }
    System.out.printf("flood: at most %d tokens above its share as counted, %d as used; %d calls"
        + " admitted of %d in %d attempts, %d tokens used of %d; all backlogged from %d ms%n",
        worstFloodExcess,
        worstFloodExcessUsed, provider.admitted,
        tenants.values().stream().mapToLong(t -> t.calls).sum(), provider.attempts,
        provider.tokensUsed, 5 * TPM,
        (allBacklogged - start) / MS);
    assertThat(worstFloodExcess).isLessThanOrEqualTo(ESTIMATE);
    double used = Math.max((double) provider.admitted / (5 * RPM),
        (double) provider.tokensUsed / (5 * TPM));
    assertThat(used).isGreaterThanOrEqualTo(0.9);
    // no polling: the upstream is asked at most about three times per admission (an arrival, a
    // signal or the retry time each), where a poll every millisecond would ask 300,000 times
    assertThat(provider.attempts).isLessThanOrEqualTo(3 * provider.admitted);
    assertThat(tenants.get("flood").timedOut).isPositive();
    assertThat(room.waiting(UP)).isPositive();
  }

  @Test
  void withoutTheRoomTheFlooderTakesMostOfTheUpstream() {
    // the same traffic decided at once, first come first served: the check above can fail
    Tenant quiet = new Tenant("quiet", 1, 40);
    Tenant flood = new Tenant("flood", 1, 200);
    long[] served = new long[2];
    Runnable[] arrivals = new Runnable[2];
    Tenant[] both = {quiet, flood};
    for (int i = 0; i < 2; i++) {
      int k = i;
      arrivals[i] = () -> {
        if (ticker.read() - start >= DURATION) {
          return;
        }
        Result r = provider.decide(ESTIMATE);
        if (r.decision().allowed()) {
          long used = 50 + random.nextInt(101);
          served[k] += used;
          scheduler.schedule(() -> r.entry().tokens = used, 2_000 * MS);
        }
        scheduler.schedule(arrivals[k], both[k].periodNanos);
      };
      scheduler.schedule(arrivals[i], i * 137 * MS);
    }
    scheduler.advance(Duration.ofNanos(DURATION));

    assertThat((double) served[0] / (served[0] + served[1])).isLessThan(0.5 * 0.9);
  }
}
