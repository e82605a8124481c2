package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two gateway instances (two enforcers, each with its waiting room) share one store and its order
 * of the upstream's waiting calls, in front of a stand-in provider that enforces its own limit (60
 * requests and 6,000 model tokens a sliding minute), answers each call with OpenAI's rate-limit
 * headers, and a 429 with {@code retry-after-ms} when a call does not fit. The provider's headers
 * are applied to the upstream as the gateway applies them. Three tenants, one flooding at ten
 * times its fair share, five minutes of driven time: the provider rarely refuses, stays used, and
 * the quiet tenants get their fair share while all three wait, however the calls are spread over
 * the instances. Without the shared order, each room orders only its own calls, and a split that
 * puts the flooder on one instance and the quiet tenants on the other gives the flooder half.
 */
class UpstreamWaitingInstancesSimulationTests {

  private static final String UP = "stand-in";
  private static final int RPM = 60;
  private static final long TPM = 6_000;
  /** How much longer than a minute a call counts on the upstream, as the starter sets it. */
  private static final Duration MARGIN = Duration.ofSeconds(1);
  private static final long MINUTE = SlidingMinute.MINUTE;
  private static final long MS = 1_000_000L;
  /** Every call's estimate: its input and its {@code max_tokens}; it uses 50 to 150 of them. */
  private static final long ESTIMATE = 150;
  private static final long DURATION = Duration.ofMinutes(5).toNanos();
  /** The waiting calls' timeouts (30 s) bound the queues; the measurement starts after. */
  private static final long WARM_UP = Duration.ofSeconds(30).toNanos();
  /** How long a call the provider accepted runs before its usage is known. */
  private static final long RUN = 2_000 * MS;
  /** The way of a request to the provider, and of its answer back, in milliseconds. */
  private static final int LATENCY_MS = 20;

  /** How the tenants' calls are spread over the two instances. */
  enum Split {
    /** Every tenant's calls alternate between both instances. */
    HALF,
    /** The flooder's calls all go to instance A, the quiet tenants' all to instance B. */
    UNEVEN
  }

  private final ManualScheduler scheduler = new ManualScheduler(new ManualTicker());
  private final ManualTicker ticker = scheduler.ticker();
  private final RateLimitStore inMemory = RateLimitStore.inMemory(ticker);
  private final Random random = new Random(25);
  private final Provider provider = new Provider();
  private final RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
      .policy("chat", KeyScope.API_KEY, new Budget("chat", WindowLimit.perMinute(100_000), null))
      .defaultPolicy("chat")
      .build();
  /** The upstream at the provider's limits, each call counting a minute and the margin. */
  private Upstream standIn = standIn(MARGIN);
  private final UpstreamWaits waits = new UpstreamWaits(Map.of("chat", Duration.ofSeconds(30)),
      Map.of(), Map.of(), Map.of(), Duration.ZERO);
  private final ProviderHeaders headers = ProviderHeaders.system();
  private final long start = ticker.read();
  /** How much a request's way to the provider varies, in milliseconds either side. */
  private int jitterMs;

  /**
   * The provider stand-in: a sliding minute of requests and model tokens (a call it accepted holds
   * its estimate until it completes, then what it used), the headers OpenAI sends with every
   * answer (the remaining counts until the earliest call leaves the minute), and a 429 with the
   * wait until the call would fit.
   */
  final class Provider {
    final SlidingMinute minute = new SlidingMinute(RPM, TPM);
    long received;
    long accepted;
    long refused;
    long tokensUsed;
    /** The calls accepted and the 429s since {@link #mark}. */
    long acceptedSinceMark;
    long refusedSinceMark;
    /** When an answer first named a lower limit than the upstream's; 0 before. */
    long said;
    /** The most calls accepted in any minute that starts at or after {@link #checkFrom}. */
    int mostInAMinuteAfterCheck;
    long checkFrom = Long.MAX_VALUE;
    private final ArrayDeque<Long> acceptedTimes = new ArrayDeque<>();

    /** One answer: its status and headers, and the accepted call's place in the minute. */
    record Answer(int status, Map<String, List<String>> headers, SlidingMinute.Entry entry) {}

    Answer receive(long estimate) {
      long now = ticker.read();
      received++;
      SlidingMinute.Entry e = minute.accept(now, estimate);
      if (e != null) {
        accepted++;
        acceptedSinceMark++;
        countAccepted(now);
        return new Answer(200, headers(now), e);
      }
      refused++;
      refusedSinceMark++;
      Map<String, List<String>> h = headers(now);
      h.put(ProviderHeaders.RETRY_AFTER_MS,
          List.of(Long.toString(Math.max(1, (minute.freeAt(estimate) - now) / MS))));
      return new Answer(429, h, null);
    }

    private void countAccepted(long now) {
      if (now - checkFrom < 0) {
        return;
      }
      acceptedTimes.add(now);
      while (now - acceptedTimes.peekFirst() >= MINUTE) {
        acceptedTimes.pollFirst();
      }
      mostInAMinuteAfterCheck = Math.max(mostInAMinuteAfterCheck, acceptedTimes.size());
    }

    private Map<String, List<String>> headers(long now) {
      SlidingMinute.Entry oldest = minute.oldest();
      long reset = oldest == null ? 0 : Math.max(1, (oldest.at + MINUTE - now) / MS);
      Map<String, List<String>> h = new LinkedHashMap<>();
      h.put(ProviderHeaders.LIMIT_REQUESTS, List.of(Integer.toString(minute.requests)));
      h.put(ProviderHeaders.REMAINING_REQUESTS,
          List.of(Integer.toString(Math.max(0, minute.requests - minute.size()))));
      h.put(ProviderHeaders.RESET_REQUESTS, List.of(reset + "ms"));
      h.put(ProviderHeaders.LIMIT_TOKENS, List.of(Long.toString(minute.tokens)));
      h.put(ProviderHeaders.REMAINING_TOKENS,
          List.of(Long.toString(Math.max(0, minute.tokens - minute.held()))));
      h.put(ProviderHeaders.RESET_TOKENS, List.of(reset + "ms"));
      return h;
    }

    void mark() {
      acceptedSinceMark = 0;
      refusedSinceMark = 0;
    }
  }

  /** One gateway instance: its room and its enforcer, over the shared store. */
  final class Instance {
    final String name;
    final UpstreamWaitingRoom room;
    final RateLimitEnforcer enforcer;
    long provider429s;
    /** The 429s of calls sent once the provider had said that it lowered its limit. */
    long provider429sAfterSaid;

    Instance(String name, RateLimitStore store, boolean sharedOrder) {
      this.name = name;
      room = new UpstreamWaitingRoom(ticker, scheduler, Map.of(),
          UpstreamWaitingRoom.DEFAULT_MAX_WAITERS, UpstreamWaitingRoom.DEFAULT_MEMORY,
          (call, ending, nanos) -> { }, sharedOrder ? store.upstreamOrder() : null,
          List.of(standIn));
      UpstreamRoutes routes =
          UpstreamRoutes.builder().upstream(standIn, List.of(), List.of("chat")).build();
      enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY, List::of,
          RateLimitPlanResolver.fixed(policies.defaultPlan()), routes, room, waits);
    }
  }

  /** What one tenant sends and was served. */
  final class Tenant implements Runnable {
    final String name;
    final long periodNanos;
    final Instance[] instances;
    long servedSinceBacklogged;
    long countedSinceBacklogged;
    long calls;
    long timedOut;
    private int next;

    Tenant(String name, double callsPerMinute, Instance... instances) {
      this.name = name;
      this.periodNanos = (long) (MINUTE / callsPerMinute);
      this.instances = instances;
    }

    @Override
    public void run() { // one arrival, then the next
      if (ticker.read() - start >= DURATION) {
        return;
      }
      calls++;
      long used = 50 + random.nextInt(101);
      Instance at = instances[next++ % instances.length];
      at.enforcer.acquireAsync("chat", RateLimitKey.of(name, "stand-in-model"), 1, () -> ESTIMATE)
          .whenComplete((outcome, failure) -> {
            if (failure != null) {
              throw new AssertionError(failure);
            }
            if (outcome.decision().allowed()) {
              send(at, this, outcome, used);
            } else {
              timedOut++;
            }
          });
      startWhenAllWait();
      scheduler.schedule(this, periodNanos);
    }
  }

  private final Map<String, Tenant> tenants = new LinkedHashMap<>();
  private final List<Instance> instances = new ArrayList<>();
  /** When every tenant first had a call waiting; 0 before. */
  private long allBacklogged;
  private long servedSinceBacklogged;
  private long countedSinceBacklogged;
  private long worstFloodExcess = Long.MIN_VALUE;
  private int samplesNotAllBacklogged;
  private int samples;

  /** A call the gateway admitted goes to the provider; its answer is reported as a front door does. */
  private void send(Instance at, Tenant t, RateLimitOutcome outcome, long used) {
    if (allBacklogged != 0) {
      t.servedSinceBacklogged += used;
      servedSinceBacklogged += used;
      t.countedSinceBacklogged += ESTIMATE;
      countedSinceBacklogged += ESTIMATE;
      excess();
    }
    boolean counted = allBacklogged != 0;
    long latency = (LATENCY_MS - jitterMs + random.nextInt(2 * jitterMs + 1)) * MS;
    long sent = ticker.read();
    scheduler.schedule(() -> {
      Provider.Answer answer = provider.receive(ESTIMATE);
      ProviderReport report = headers.parse(answer.status(), answer.headers()::get);
      if (answer.status() == 429) {
        at.provider429s++;
        if (provider.said != 0 && sent - provider.said >= 0) {
          at.provider429sAfterSaid++;
        }
      }
      if (provider.said == 0 && provider.minute.requests < RPM) {
        provider.said = ticker.read(); // the first answer that names the lower limit
      }
      at.enforcer.report(standIn, report, answer.status());
      if (answer.status() == 429) {
        outcome.modelTokens().settle(0L, true);
        return;
      }
      scheduler.schedule(() -> {
        answer.entry().tokens = used;
        provider.tokensUsed += used;
        if (counted) {
          t.countedSinceBacklogged += used - ESTIMATE;
          countedSinceBacklogged += used - ESTIMATE;
          excess();
        }
        outcome.modelTokens().settle(used, false);
      }, RUN);
    }, latency);
  }

  /** How far the flooder is above its share of the tokens served, as the order counts them. */
  private void excess() {
    Tenant flood = tenants.get("flood");
    worstFloodExcess = Math.max(worstFloodExcess,
        flood.countedSinceBacklogged - Math.round(countedSinceBacklogged / 3.0));
  }

  private int waiting(Tenant t) {
    return instances.stream().mapToInt(i -> i.room.waiting(UP, t.name)).sum();
  }

  private boolean allWait() {
    return tenants.values().stream().allMatch(t -> waiting(t) > 0);
  }

  private void startWhenAllWait() {
    if (allBacklogged == 0 && ticker.read() - start >= WARM_UP && allWait()) {
      allBacklogged = ticker.read();
    }
  }

  /** Once a second after the measurement started: counts the seconds not all tenants wait. */
  private void sample() {
    if (allBacklogged != 0) {
      samples++;
      if (!allWait()) {
        samplesNotAllBacklogged++;
      }
    }
    if (ticker.read() - start < DURATION) {
      scheduler.schedule(this::sample, 1_000 * MS);
    }
  }

  /** What one run measured. */
  record Run(double quiet1, double quiet2, long floodExcess, long received, long refused,
      long accepted, long tokensUsed, long calls, long allBackloggedMs, int notAllWaiting,
      long refusedA, long refusedB, int decisions, int firsts) {

    double used() {
      return Math.max((double) accepted / (5 * RPM), (double) tokensUsed / (5 * TPM));
    }

    double refusedShare() {
      return (double) refused / received;
    }

    String line(String name) {
      return String.format("%s: quiet %.4f, %.4f (fair 0.3333); flooder at most %d tokens above"
          + " its share; provider received %d, refused %d (%.2f %%; A %d, B %d), used %.3f (%d"
          + " calls, %d tokens); %d calls sent; %d store decisions and %d asks of the order's first"
          + " call; all waiting from %d ms, %d samples not",
          name, quiet1, quiet2, floodExcess, received, refused, 100 * refusedShare(), refusedA,
          refusedB, used(), accepted, tokensUsed, calls, decisions, firsts, allBackloggedMs,
          notAllWaiting);
    }
  }

  private Run run(boolean sharedOrder, Split split, int jitter) {
    jitterMs = jitter;
    DrivenOrderStore store = new DrivenOrderStore(inMemory, sharedOrder ? scheduler : null);
    Instance a = new Instance("A", store, sharedOrder);
    Instance b = new Instance("B", store, sharedOrder);
    instances.add(a);
    instances.add(b);
    double share = RPM / 3.0; // calls a minute of 100 tokens on average
    Instance[] quietAt = split == Split.HALF ? new Instance[] {a, b} : new Instance[] {b};
    Instance[] floodAt = split == Split.HALF ? new Instance[] {b, a} : new Instance[] {a};
    Tenant[] all = {new Tenant("quiet1", 2 * share, quietAt),
        new Tenant("quiet2", 2 * share, quietAt), new Tenant("flood", 10 * share, floodAt)};
    long phase = 0;
    for (Tenant t : all) {
      tenants.put(t.name, t);
      scheduler.schedule(t, phase);
      phase += 137 * MS;
    }
    scheduler.schedule(this::sample, 0);
    scheduler.advance(Duration.ofNanos(DURATION));
    return new Run(share("quiet1"), share("quiet2"), worstFloodExcess, provider.received,
        provider.refused, provider.accepted, provider.tokensUsed,
        all[0].calls + all[1].calls + all[2].calls, (allBacklogged - start) / MS,
        samplesNotAllBacklogged, a.provider429s, b.provider429s, store.decisions, store.firsts);
  }

  /** The stand-in upstream at the provider's limits, a call counting a minute and {@code margin}. */
  private static Upstream standIn(Duration margin) {
    Duration window = Duration.ofMinutes(1).plus(margin);
    return new Upstream(UP, new WindowLimit(RPM, window), new ModelTokenLimit(TPM, window), null);
  }

  private double share(String tenant) {
    return (double) tenants.get(tenant).servedSinceBacklogged / servedSinceBacklogged;
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Split.class)
  void withTheSharedOrderTheQuietTenantsGetTheirShareOnEitherInstance(Split split) {
    Run r = run(true, split, 0);
    System.out.println(r.line("shared order, " + split));

    assertThat(r.allBackloggedMs() * MS).isBetween(WARM_UP, WARM_UP + 5_000 * MS);
    assertThat(r.notAllWaiting()).isZero();
    assertThat(r.quiet1()).isBetween(0.9 / 3, 1.1 / 3);
    assertThat(r.quiet2()).isBetween(0.9 / 3, 1.1 / 3);
    // measured from an instant at which the counters may differ by up to a call: two calls' bound
    assertThat(r.floodExcess()).isLessThanOrEqualTo(2 * ESTIMATE);
    assertThat(r.refusedShare()).isLessThanOrEqualTo(0.01);
    assertThat(r.used()).isGreaterThanOrEqualTo(0.9);
  }

  @Test
  void whenTheWayToTheProviderVariesWithoutAMarginItsMinuteAndTheGatewaysDriftApart() {
    standIn = standIn(Duration.ZERO);
    Run r = run(true, Split.HALF, 20);
    System.out.println(r.line("shared order, HALF, latency 0 to 40 ms, no margin"));

    assertThat(r.quiet1()).isBetween(0.9 / 3, 1.1 / 3);
    assertThat(r.quiet2()).isBetween(0.9 / 3, 1.1 / 3);
    assertThat(r.used()).isGreaterThanOrEqualTo(0.9);
    // a call admitted as the gateway's minute frees may reach the provider before its own frees
    assertThat(r.refusedShare()).isGreaterThan(0.01).isLessThanOrEqualTo(0.06);
  }

  @Test
  void whenTheWayToTheProviderVariesTheMarginKeepsTheGatewaysMinuteBehindTheProviders() {
    Run r = run(true, Split.HALF, 20);
    System.out.println(r.line("shared order, HALF, latency 0 to 40 ms, margin 1s"));

    assertThat(r.quiet1()).isBetween(0.9 / 3, 1.1 / 3);
    assertThat(r.quiet2()).isBetween(0.9 / 3, 1.1 / 3);
    assertThat(r.used()).isGreaterThanOrEqualTo(0.9);
    assertThat(r.refusedShare()).isLessThanOrEqualTo(0.01);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(Split.class)
  void withOnlyEachRoomsOwnOrderTheSplitDecidesTheShares(Split split) {
    Run r = run(false, split, 0);
    System.out.println(r.line("own orders, " + split));

    assertThat(r.refusedShare()).isLessThanOrEqualTo(0.01); // the store still holds the budget
    if (split == Split.UNEVEN) { // each instance gets about half: the flooder's instance too
      assertThat(r.quiet1()).isLessThan(0.9 / 3);
      assertThat(r.quiet2()).isLessThan(0.9 / 3);
    }
  }

  @Test
  void whenTheProviderLowersItsLimitTheGatewayFollowsWithinOneResetWithAtMostOne429PerInstance() {
    RateLimitStore store = new DrivenOrderStore(inMemory, scheduler);
    Instance a = new Instance("A", store, true);
    Instance b = new Instance("B", store, true);
    instances.add(a);
    instances.add(b);
    Tenant quiet = new Tenant("quiet1", 40, a, b);
    Tenant flood = new Tenant("flood", 200, b, a);
    tenants.put(quiet.name, quiet);
    tenants.put(flood.name, flood);
    scheduler.schedule(quiet, 0);
    scheduler.schedule(flood, 137 * MS);
    scheduler.advance(Duration.ofMinutes(2));
    assertThat(provider.refused).isLessThanOrEqualTo(2);

    long beforeA = a.provider429s;
    long beforeB = b.provider429s;
    long before = beforeA + beforeB;
    provider.minute.requests = 30; // from now on its headers say 30 and 3,000
    provider.minute.tokens = 3_000;
    provider.mark();
    long lowered = ticker.read();
    provider.checkFrom = lowered + MINUTE; // one reset interval later: within the lower limit
    scheduler.advance(Duration.ofMinutes(3));

    UpstreamStatus status = inMemory.upstreamStatus(standIn);
    System.out.printf("lowered to 30 requests, 3,000 tokens a minute: %d 429s after it (A %d, B"
        + " %d; %d before), of calls sent once the provider had said so: A %d, B %d; at most %d"
        + " calls accepted in any minute from one minute after; %d accepted in the three minutes;"
        + " %s%n", provider.refusedSinceMark, a.provider429s - beforeA, b.provider429s - beforeB,
        before, a.provider429sAfterSaid, b.provider429sAfterSaid,
        provider.mostInAMinuteAfterCheck, provider.acceptedSinceMark, status);
    // at most one per instance from the change on: the probe goes first after the provider's word
    assertThat(a.provider429s - beforeA).isLessThanOrEqualTo(1);
    assertThat(b.provider429s - beforeB).isLessThanOrEqualTo(1);
    assertThat(a.provider429sAfterSaid).isZero();
    assertThat(b.provider429sAfterSaid).isZero();
    assertThat(status.requestsLimit()).isEqualTo(30);
    assertThat(provider.mostInAMinuteAfterCheck).isBetween(27, 30);
    assertThat(ticker.read() - lowered).isEqualTo(Duration.ofMinutes(3).toNanos());
  }
}
