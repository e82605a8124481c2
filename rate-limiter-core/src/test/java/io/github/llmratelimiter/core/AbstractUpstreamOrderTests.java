package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The store test suite for the fair order of an upstream's waiting calls ({@link UpstreamOrder}),
 * through {@link RateLimitStore#upstreamOrder()} and {@link RateLimitStore#reserve(List, List,
 * double, Consumption, Composition, Upstream, UpstreamTurn)} only. Every store that keeps an order
 * must pass it unchanged, on the driven clock of {@link StoreTckSupport}.
 *
 * <p>The order as these tests read its contract, per upstream and priority class: a tenant's
 * counter grows by {@code estimate / weight} for every waiting call admitted in its turn and by
 * {@code (actual - estimate) / weight} when one of its calls is settled; the backlogged tenant with
 * the least counter goes first, on a tie the one whose earliest waiting call entered first; a
 * tenant that becomes backlogged is lifted to {@code max(own, least backlogged counter)}, or, when
 * no tenant of its class is backlogged, to {@code max(own, the class's last-left counter)}, which
 * the last tenant that left the class's backlog sets to its counter and a call admitted without
 * waiting to {@code max(own, last-left) + estimate / weight}, leaving its tenant's counter (a
 * tenant with no counter kept counts as 0, and settling its call leaves it alone). Estimates and
 * weights below keep every counter an exact binary number.
 */
public abstract class AbstractUpstreamOrderTests extends StoreTckSupport {

  /** A tenant's level that admits every call the tests make. */
  private static final Budget TENANT = new Budget("tenant", WindowLimit.perMinute(1_000), null);

  /** An upstream with room for every call the tests make. */
  private static final Upstream OPENAI =
      new Upstream("openai", WindowLimit.perMinute(1_000), null, null);

  private static final Duration LONG_WAIT = Duration.ofMinutes(5);

  /** Per waiter id, its label in the test ("a1") and its turn naming it. */
  private final Map<String, String> labels = new HashMap<>();
  private final Map<String, UpstreamTurn> turns = new HashMap<>();

  private UpstreamOrder order() {
    UpstreamOrder order = store.upstreamOrder();
    assertThat(order).as("the store keeps an order").isNotNull();
    return order;
  }

  private static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("the order's stage did not complete", e);
    }
  }

  private static UpstreamTurn turn(String tenant, long estimate) {
    return new UpstreamTurn(tenant, 1, 0, estimate, null);
  }

  private static UpstreamTurn turn(String tenant, double weight, int priority, long estimate) {
    return new UpstreamTurn(tenant, weight, priority, estimate, null);
  }

  /** Puts a call labelled {@code label} in {@code u}'s order; returns its id. */
  private String enter(Upstream u, String label, UpstreamTurn turn, Duration maxWait) {
    String id = join(order().enter(u, turn, maxWait));
    assertThat(id).isNotBlank();
    assertThat(labels).as("ids are unique").doesNotContainKey(id);
    labels.put(id, label);
    turns.put(id, turn.waiting(id));
    return id;
  }

  private String enter(Upstream u, String label, UpstreamTurn turn) {
    return enter(u, label, turn, LONG_WAIT);
  }

  /** Enters {@code count} calls of {@code turn}, labelled {@code tenant1}, {@code tenant2}, ... */
  private void enterMany(Upstream u, UpstreamTurn turn, int count) {
    for (int i = 1; i <= count; i++) {
      enter(u, turn.tenant() + i, turn);
    }
  }

  private Reservation reserve(Upstream u, UpstreamTurn turn) {
    return reserve(u, turn, Composition.SEQUENTIAL);
  }

  private Reservation reserve(Upstream u, UpstreamTurn turn, Composition mode) {
    return store.reserve(List.of(TENANT), List.of(turn.tenant()), 1,
        Consumption.ofCall(turn.estimate(), 0), mode, u, turn);
  }

  /** Serves a call with a turn while none waits: it passes through the order at once. */
  private void served(Upstream u, UpstreamTurn turn) {
    assertThat(first(u)).isEmpty();
    assertThat(reserve(u, turn).decision().allowed()).isTrue();
  }

  private Optional<String> first(Upstream u) {
    return join(order().first(u));
  }

  private long waiting(Upstream u) {
    return join(order().waiting(u));
  }

  /**
   * Admits the first waiting call {@code count} times, each through its turn; checks that it
   * leaves the order in the same step; returns the labels in the order admitted.
   */
  private List<String> admit(Upstream u, int count) {
    List<String> admitted = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      long before = waiting(u);
      String id = first(u).orElseThrow();
      Reservation r = reserve(u, turns.get(id));
      assertThat(r.decision().allowed()).as(labels.get(id) + ": " + r.decision()).isTrue();
      admitted.add(labels.get(id));
      assertThat(waiting(u)).as("the admitted call left the order").isEqualTo(before - 1);
      assertThat(first(u)).as("the first call moved on").isNotEqualTo(Optional.of(id));
    }
    return admitted;
  }

  /** Admits every waiting call in order; returns their labels. */
  private List<String> drain(Upstream u) {
    List<String> admitted = admit(u, (int) waiting(u));
    assertThat(first(u)).isEmpty();
    return admitted;
  }

  private void assertOrderDeny(Decision d, Upstream u, long retryMs) {
    assertThat(d.allowed()).as(d.toString()).isFalse();
    assertThat(d.reason()).as(d.toString()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(d.level()).isEqualTo(u.budget().name());
    assertThat(d.retryable()).isTrue();
    assertThat(d.retryAfterMs()).as(d.toString()).isEqualTo(retryMs);
  }

  private long pollMs() {
    return order().pollInterval().toMillis();
  }

  @Test
  void anEmptyOrderAdmitsEveryTurn() {
    assertThat(order().pollInterval()).isPositive();
    assertThat(first(OPENAI)).isEmpty();
    assertThat(waiting(OPENAI)).isZero();
    assertThat(reserve(OPENAI, turn("a", 100)).decision().allowed()).isTrue();
    // a turn that names a call no longer waiting is one like any other while none waits
    String id = enter(OPENAI, "a1", turn("a", 100));
    assertThat(waiting(OPENAI)).isOne();
    join(order().leave(OPENAI, id));
    assertThat(waiting(OPENAI)).isZero();
    assertThat(reserve(OPENAI, turns.get(id)).decision().allowed()).isTrue();
    assertThat(store.upstreamStatus(OPENAI).requestsRemaining()).isEqualTo(998);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void whileCallsWaitOnlyTheFirstIsAdmittedAndEveryOtherTurnChargesNothing(Composition mode) {
    // one call a minute, a bucket that never refills, model tokens: any charge shows
    Budget strict = new Budget("strict", WindowLimit.perMinute(1), new BucketLimit(1, 0),
        ModelTokenLimit.perMinute(1_000));
    Upstream u = new Upstream("openai", WindowLimit.perMinute(3),
        ModelTokenLimit.perMinute(10_000), null);
    String a = enter(u, "a1", turn("a", 100));
    String b = enter(u, "b1", turn("b", 100));
    UpstreamStatus before = store.upstreamStatus(u);
    List<UpstreamTurn> others = List.of(turn("c", 100), turns.get(b),
        turn("c", 100).waiting("no-such-waiter"));
    for (UpstreamTurn t : others) {
      assertOrderDeny(store.reserve(List.of(strict), List.of(t.tenant()), 1,
          Consumption.ofCall(100, 0), mode, u, t).decision(), u, pollMs());
      assertOrderDeny(join(store.reserveAsync(List.of(strict), List.of(t.tenant()), 1,
          Consumption.ofCall(100, 0), mode, u, t)).decision(), u, pollMs());
    }
    assertThat(store.upstreamStatus(u)).as("the upstream was not charged").isEqualTo(before);
    assertThat(waiting(u)).isEqualTo(2);
    assertThat(first(u)).contains(a);
    Reservation admitted = store.reserve(List.of(strict), List.of("a"), 1,
        Consumption.ofCall(100, 0), mode, u, turns.get(a));
    assertThat(admitted.decision().allowed()).as(admitted.decision().toString()).isTrue();
    assertThat(waiting(u)).as("the admitted call left the order in the same step").isOne();
    assertThat(first(u)).contains(b);
    // its turn is no longer first: a second call with it waits like any other
    assertOrderDeny(store.reserve(List.of(strict), List.of("a-again"), 1,
        Consumption.ofCall(100, 0), mode, u, turns.get(a)).decision(), u, pollMs());
    // the denied callers' own budgets are whole: their one call a minute passes
    assertThat(join(store.reserveAsync(List.of(strict), List.of("b"), 1,
        Consumption.ofCall(1_000, 0), mode, u, turns.get(b))).decision().allowed()).isTrue();
    assertThat(first(u)).isEmpty();
    assertThat(store.reserve(List.of(strict), List.of("c"), 1, Consumption.ofCall(1_000, 0),
        mode, u, turn("c", 1_000)).decision().allowed()).isTrue();
    UpstreamStatus after = store.upstreamStatus(u);
    assertThat(after.requestsRemaining()).as("three admitted calls, nothing else").isZero();
    assertThat(after.modelTokensRemaining()).isEqualTo(10_000 - 100 - 1_000 - 1_000);
  }

  @Test
  void theLeastServedTenantGoesFirst() {
    enterMany(OPENAI, turn("a", 300), 2);
    enterMany(OPENAI, turn("b", 100), 4);
    // a1: a=300; b at 100, 200, 300; tie at 300: a2 entered before b4
    assertThat(drain(OPENAI)).containsExactly("a1", "b1", "b2", "b3", "a2", "b4");
  }

  @Test
  void aTenantsServiceIsDividedByItsWeight() {
    enterMany(OPENAI, turn("a", 2, 0, 100), 3);
    enterMany(OPENAI, turn("b", 1, 0, 100), 3);
    // a grows by 50 a call, b by 100
    assertThat(drain(OPENAI)).containsExactly("a1", "b1", "a2", "a3", "b2", "b3");
  }

  @Test
  void aTenantThatBecomesBackloggedIsLiftedToTheLeastBackloggedCounter() {
    enterMany(OPENAI, turn("a", 100), 4);
    assertThat(admit(OPENAI, 2)).containsExactly("a1", "a2"); // a=200, still backlogged
    enterMany(OPENAI, turn("b", 100), 3); // lifted from 0 to 200: it does not bank its idle time
    assertThat(drain(OPENAI)).containsExactly("a3", "b1", "a4", "b2", "b3");
  }

  @Test
  void aTenantThatFindsNoBacklogIsLiftedToTheLastTenantThatLeft() {
    served(OPENAI, turn("x", 600)); // x=600, the last that left: 600
    served(OPENAI, turn("a", 400)); // lifted to 600, served: a=1000, the last that left: 1000
    enterMany(OPENAI, turn("b", 100), 2); // none backlogged: b lifted to 1000
    enter(OPENAI, "x1", turn("x", 100)); // lifted from 600 to b's 1000
    // unlifted, b (100, 200) would pass x (600) twice
    assertThat(drain(OPENAI)).containsExactly("b1", "x1", "b2");
    // b left last, served to 1200: y is lifted to 1200, and x (1100) to y's 1200
    enterMany(OPENAI, turn("y", 100), 2);
    enter(OPENAI, "x2", turn("x", 100));
    // lifted only to a's 1000, y (1100) would pass x (1100) on the tie
    assertThat(drain(OPENAI)).containsExactly("y1", "x2", "y2");
  }

  @Test
  void onATieTheTenantWhoseEarliestCallEnteredFirstGoesFirst() {
    enter(OPENAI, "zed1", turn("zed", 100));
    enter(OPENAI, "amy1", turn("amy", 100));
    enter(OPENAI, "zed2", turn("zed", 100));
    assertThat(first(OPENAI).map(labels::get)).contains("zed1");
    // zed=100 after zed1, amy=100 after amy1: zed2 entered before amy's next
    enter(OPENAI, "amy2", turn("amy", 100));
    assertThat(drain(OPENAI)).containsExactly("zed1", "amy1", "zed2", "amy2");
  }

  @Test
  void aTenantsOwnCallsGoInTheOrderTheyEntered() {
    long[] estimates = {500, 10, 1_000, 0, 200, 30};
    for (int i = 0; i < estimates.length; i++) {
      enter(OPENAI, "a" + (i + 1), turn("a", estimates[i]));
    }
    assertThat(drain(OPENAI)).containsExactly("a1", "a2", "a3", "a4", "a5", "a6");
  }

  @Test
  void aLowerPriorityClassAlwaysGoesFirst() {
    served(OPENAI, turn("a", 1, 0, 5_000)); // a=5000 in class 0
    enterMany(OPENAI, turn("b", 1, 1, 100), 2); // class 1, b=0
    enterMany(OPENAI, turn("a", 1, 0, 100), 2);
    assertThat(waiting(OPENAI)).isEqualTo(4);
    assertThat(drain(OPENAI)).containsExactly("a1", "a2", "b1", "b2");
  }

  @Test
  void aCallAtOnceMovesOnlyItsClassesLastLeftCounter() {
    served(OPENAI, turn("a", 1, 0, 5_000)); // class 0's mark: 5000; a's own counter stays 0
    enterMany(OPENAI, turn("b", 1, 1, 100), 2); // class 1: b lifted to its mark, 0
    enter(OPENAI, "a1", turn("a", 1, 1, 100)); // lifted to b's 0, not held at 5000
    assertThat(drain(OPENAI)).containsExactly("b1", "a1", "b2");
    served(OPENAI, turn("x", 100)); // class 0's mark: 5100
    join(order().settled(OPENAI, turn("x", 100), 10_000)); // x keeps no counter: left alone
    enter(OPENAI, "y1", turn("y", 100)); // lifted to 5100
    enter(OPENAI, "x1", turn("x", 100)); // lifted to y's 5100, not from 15000
    enter(OPENAI, "y2", turn("y", 100));
    assertThat(drain(OPENAI)).containsExactly("y1", "x1", "y2");
  }

  @Test
  void settlingCorrectsTheCounterByTheDifferenceOverTheWeight() {
    enterMany(OPENAI, turn("a", 2, 0, 100), 2);
    enterMany(OPENAI, turn("b", 1, 0, 100), 4);
    String a1 = first(OPENAI).orElseThrow();
    assertThat(admit(OPENAI, 1)).containsExactly("a1"); // a=50
    join(order().settled(OPENAI, turns.get(a1), 600)); // a = 50 + (600 - 100) / 2 = 300
    // b at 100, 200, 300; tie at 300: a2 entered before b4
    assertThat(drain(OPENAI)).containsExactly("b1", "b2", "b3", "a2", "b4");
    // a call that used less than its estimate gives the difference back
    enterMany(OPENAI, turn("c", 100), 2);
    enterMany(OPENAI, turn("d", 100), 2);
    String c1 = first(OPENAI).orElseThrow();
    assertThat(admit(OPENAI, 1)).containsExactly("c1");
    join(order().settled(OPENAI, turns.get(c1), 0)); // back to c and d's equal start
    assertThat(drain(OPENAI)).containsExactly("c2", "d1", "d2");
  }

  @Test
  void aCallThatLeavesIsOutOfTheOrderAndLeavingTwiceOrUnknownChangesNothing() {
    String a1 = enter(OPENAI, "a1", turn("a", 100));
    String b1 = enter(OPENAI, "b1", turn("b", 100));
    enter(OPENAI, "a2", turn("a", 100));
    join(order().leave(OPENAI, a1));
    assertThat(waiting(OPENAI)).isEqualTo(2);
    assertThat(first(OPENAI)).contains(b1); // a's earliest waiting call is now a2, after b1
    assertOrderDeny(reserve(OPENAI, turns.get(a1)).decision(), OPENAI, pollMs());
    join(order().leave(OPENAI, a1));
    join(order().leave(OPENAI, "no-such-waiter"));
    join(order().leave(new Upstream("azure", WindowLimit.perMinute(5), null, null), b1));
    assertThat(waiting(OPENAI)).isEqualTo(2);
    assertThat(drain(OPENAI)).containsExactly("b1", "a2");
  }

  @Test
  void aCallWhoseWaitPassedIsOutOfTheOrder() {
    String a1 = enter(OPENAI, "a1", turn("a", 100), Duration.ofSeconds(5));
    String b1 = enter(OPENAI, "b1", turn("b", 100));
    ticker.advanceMillis(4_999);
    assertThat(waiting(OPENAI)).isEqualTo(2);
    assertThat(first(OPENAI)).contains(a1);
    assertOrderDeny(reserve(OPENAI, turns.get(b1)).decision(), OPENAI, pollMs());
    ticker.advanceMillis(1);
    assertThat(waiting(OPENAI)).as("a1's five seconds passed").isOne();
    assertThat(first(OPENAI)).contains(b1);
    assertOrderDeny(reserve(OPENAI, turns.get(a1)).decision(), OPENAI, pollMs());
    assertThat(drain(OPENAI)).containsExactly("b1");
  }

  @Test
  void aCallWhoseWaitPassedNoLongerBlocksOthersEvenUnread() {
    enter(OPENAI, "a1", turn("a", 100), Duration.ofMillis(250));
    ticker.advanceMillis(250);
    // nothing read the order since: the admission itself sees that a1 is gone
    assertThat(reserve(OPENAI, turn("b", 100)).decision().allowed()).isTrue();
    assertThat(waiting(OPENAI)).isZero();
  }

  @Test
  void theUpstreamsOwnDenyOfTheFirstCallKeepsItFirst() {
    Upstream u = new Upstream("openai", WindowLimit.perMinute(2), null, null);
    served(u, turn("c", 100));
    ticker.advanceMillis(10_000);
    served(u, turn("d", 100));
    ticker.advanceMillis(10_000);
    String a1 = enter(u, "a1", turn("a", 100));
    String b1 = enter(u, "b1", turn("b", 100));
    // the upstream has no room: every turn waits the upstream's own wait
    assertOrderDeny(reserve(u, turns.get(a1)).decision(), u, 40_000);
    assertOrderDeny(reserve(u, turns.get(b1)).decision(), u, 40_000);
    assertOrderDeny(reserve(u, turn("e", 100)).decision(), u, 40_000);
    assertThat(first(u)).contains(a1);
    assertThat(waiting(u)).isEqualTo(2);
    ticker.advanceMillis(40_000);
    assertThat(admit(u, 1)).containsExactly("a1");
    assertOrderDeny(reserve(u, turns.get(b1)).decision(), u, 10_000);
    assertThat(first(u)).contains(b1);
    ticker.advanceMillis(10_000);
    assertThat(drain(u)).containsExactly("b1");
  }

  @Test
  void theFirstCallsOwnBudgetDenyKeepsItFirst() {
    Budget strict = new Budget("strict", WindowLimit.perMinute(1), null);
    assertThat(store.acquire(strict, "a", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    String a1 = enter(OPENAI, "a1", turn("a", 100));
    Decision d = store.reserve(List.of(strict), List.of("a"), 1, Consumption.ofCall(100, 0),
        Composition.SEQUENTIAL, OPENAI, turns.get(a1)).decision();
    assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(d.level()).isEqualTo("strict");
    assertThat(first(OPENAI)).contains(a1);
    assertThat(waiting(OPENAI)).isOne();
    assertOrderDeny(reserve(OPENAI, turn("b", 100)).decision(), OPENAI, pollMs());
  }

  @Test
  void aSignalReachesEveryListenerAndAClosedListenerHearsNoMore() throws Exception {
    List<String> one = new CopyOnWriteArrayList<>();
    List<String> two = new CopyOnWriteArrayList<>();
    AutoCloseable first = order().listen(one::add);
    AutoCloseable second = order().listen(two::add);
    // a signal may be dropped (a subscription not yet in place): signalled again until heard
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      order().signal("openai");
      assertThat(one).contains("openai");
      assertThat(two).contains("openai");
    });
    first.close();
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      order().signal("azure");
      assertThat(two).contains("azure");
    });
    assertThat(one).containsOnly("openai");
    second.close();
  }

  @Test
  void aListenerThatThrowsReachesNeitherTheSignallerNorTheOtherListeners() throws Exception {
    List<String> heard = new CopyOnWriteArrayList<>();
    try (AutoCloseable bad = order().listen(name -> {
          throw new IllegalStateException("a listener's bug");
        });
        AutoCloseable good = order().listen(heard::add)) {
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
        assertThatNoException().isThrownBy(() -> order().signal("openai"));
        assertThat(heard).contains("openai");
      });
    }
  }

  @Test
  void twoUpstreamsHaveOrdersAndCountersOfTheirOwn() {
    Upstream azure = new Upstream("azure", WindowLimit.perMinute(1_000), null, null);
    String a1 = enter(OPENAI, "a1", turn("a", 1_000));
    assertThat(reserve(azure, turn("b", 100)).decision().allowed()).isTrue();
    assertThat(first(azure)).isEmpty();
    assertThat(waiting(azure)).isZero();
    enter(azure, "az-a1", turn("a", 100));
    enter(azure, "az-a2", turn("a", 100));
    enter(azure, "az-b1", turn("b", 100));
    enter(azure, "az-b2", turn("b", 100));
    assertThat(waiting(OPENAI)).isOne();
    assertThat(waiting(azure)).isEqualTo(4);
    assertThat(first(OPENAI)).contains(a1);
    assertThat(admit(OPENAI, 1)).containsExactly("a1"); // a=1000 on openai, not on azure
    assertThat(drain(azure)).containsExactly("az-a1", "az-b1", "az-a2", "az-b2");
  }

  /** A call admitted in the stress test, with the steps of a shared counter around its enter. */
  private record Admitted(String tenant, long enterStart, long enterEnd, long admitStart,
      long admitEnd) {}

  @Test
  @Timeout(120)
  void concurrentCallersAreEachAdmittedOnceAndOnlyInTurn() throws Exception {
    Upstream u = new Upstream("hot", WindowLimit.perMinute(100_000), null, null);
    int threads = 4;
    int calls = 25;
    AtomicLong steps = new AtomicLong();
    AtomicInteger nextThread = new AtomicInteger();
    Set<String> admittedIds = ConcurrentHashMap.newKeySet();
    List<List<Admitted>> results = runConcurrently(threads, () -> {
      int me = nextThread.getAndIncrement();
      String tenant = "t" + (me % 2); // two threads per tenant: its calls come from both
      List<Admitted> mine = new ArrayList<>();
      for (int i = 0; i < calls; i++) {
        UpstreamTurn t = turn(tenant, 10 + me);
        long enterStart = steps.incrementAndGet();
        String id = join(order().enter(u, t, LONG_WAIT));
        long enterEnd = steps.incrementAndGet();
        if (i % 5 == 4) {
          join(order().leave(u, id));
          continue;
        }
        // while this call waits, a turn without a waiter is never admitted
        Decision other = reserve(u, turn(tenant, 10)).decision();
        assertThat(other.reason()).as(other.toString()).isEqualTo(Reason.UPSTREAM_LIMIT);
        while (true) {
          long admitStart = steps.incrementAndGet();
          Decision d = reserve(u, t.waiting(id)).decision();
          long admitEnd = steps.incrementAndGet();
          if (d.allowed()) {
            assertThat(admittedIds.add(id)).as("admitted once: " + id).isTrue();
            mine.add(new Admitted(tenant, enterStart, enterEnd, admitStart, admitEnd));
            break;
          }
          assertThat(d.reason()).as(d.toString()).isEqualTo(Reason.UPSTREAM_LIMIT);
          Thread.yield();
        }
      }
      return mine;
    });
    List<Admitted> all = results.stream().flatMap(List::stream).toList();
    assertThat(all).hasSize(threads * calls * 4 / 5);
    assertThat(waiting(u)).isZero();
    assertThat(first(u)).isEmpty();
    assertThat(store.upstreamStatus(u).requestsRemaining()).as("the upstream charged once a call")
        .isEqualTo(100_000 - all.size());
    for (String tenant : List.of("t0", "t1")) {
      assertThat(admin().inspect(TENANT, tenant).orElseThrow().windowUsed())
          .as("denies charged nothing").isEqualTo(all.stream()
              .filter(a -> a.tenant().equals(tenant)).count());
    }
    // a tenant's calls are admitted in the order they entered: one that entered wholly before
    // another is never admitted wholly after it
    for (Admitted x : all) {
      for (Admitted y : all) {
        if (x.tenant().equals(y.tenant()) && x.enterEnd() < y.enterStart()) {
          assertThat(y.admitEnd() < x.admitStart()).as(x + " entered before " + y).isFalse();
        }
      }
    }
  }

  @Test
  void badArgumentsAreRefused() {
    UpstreamOrder order = order();
    UpstreamTurn t = turn("a", 100);
    Duration wait = Duration.ofSeconds(1);
    assertThatIllegalArgumentException().isThrownBy(() -> order.enter(null, t, wait))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(() -> order.enter(OPENAI, null, wait))
        .withMessageContaining("turn");
    assertThatIllegalArgumentException().isThrownBy(() -> order.enter(OPENAI, t, null))
        .withMessageContaining("maxWait");
    assertThatIllegalArgumentException().isThrownBy(() -> order.enter(OPENAI, t, Duration.ZERO))
        .withMessageContaining("maxWait");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> order.enter(OPENAI, t, Duration.ofMillis(-1)))
        .withMessageContaining("maxWait");
    assertThatIllegalArgumentException().isThrownBy(() -> order.leave(null, "w"))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(() -> order.leave(OPENAI, null))
        .withMessageContaining("waiter");
    assertThatIllegalArgumentException().isThrownBy(() -> order.leave(OPENAI, " "))
        .withMessageContaining("waiter");
    assertThatIllegalArgumentException().isThrownBy(() -> order.first(null))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(() -> order.waiting(null))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(() -> order.settled(null, t, 1))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(() -> order.settled(OPENAI, null, 1))
        .withMessageContaining("turn");
    assertThatIllegalArgumentException().isThrownBy(() -> order.settled(OPENAI, t, -1))
        .withMessageContaining("actual");
    assertThatIllegalArgumentException().isThrownBy(() -> order.signal(null))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(() -> order.signal(""))
        .withMessageContaining("upstream");
    assertThatIllegalArgumentException().isThrownBy(() -> order.listen(null))
        .withMessageContaining("listener");
    assertThatIllegalArgumentException().isThrownBy(() -> store.reserve(List.of(TENANT),
        List.of("a"), 1, Consumption.ofCall(0, 0), Composition.SEQUENTIAL, OPENAI, null))
        .withMessageContaining("turn");
    assertThatIllegalArgumentException().isThrownBy(() -> store.reserveAsync(List.of(TENANT),
        List.of("a"), 1, Consumption.ofCall(0, 0), Composition.SEQUENTIAL, OPENAI, null))
        .withMessageContaining("turn");
    assertThatIllegalArgumentException().isThrownBy(() -> store.reserve(List.of(TENANT),
        List.of("a"), 1, Consumption.ofCall(0, 0), Composition.SEQUENTIAL, null, t))
        .withMessageContaining("upstream");
    assertThat(waiting(OPENAI)).as("nothing entered").isZero();
    assertThat(store.upstreamStatus(OPENAI).requestsRemaining()).as("nothing charged")
        .isEqualTo(1_000);
  }
}
