package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What the in-memory order adds to the order TCK: how long and how many tenants' counters it
 * keeps, and that a signal neither runs the listeners on nor waits for them on its caller's
 * thread.
 */
class InMemoryUpstreamOrderTests {

  private static final Upstream U = new Upstream("openai", WindowLimit.perMinute(1_000), null,
      null);
  private static final Budget TENANT = new Budget("tenant", WindowLimit.perMinute(1_000), null);
  private static final Duration HOUR = Duration.ofHours(1);

  private final ManualTicker ticker = new ManualTicker();
  private final InMemoryStore store = new InMemoryStore(ticker, 1_000, 1);
  private final UpstreamOrder order = store.upstreamOrder();

  private static UpstreamTurn turn(String tenant) {
    return new UpstreamTurn(tenant, 1, 0, 100, null);
  }

  private int tenants() {
    UpstreamState s = store.upstreamState(U);
    synchronized (s) {
      return s.queue().tenants();
    }
  }

  private void served(UpstreamTurn turn) {
    assertThat(store.reserve(List.of(TENANT), List.of(turn.tenant()), 1,
        Consumption.ofCall(100, 0), Composition.SEQUENTIAL, U, turn).decision().allowed()).isTrue();
  }

  /** Serves a call of {@code tenant} that waited (alone) in the order; returns its turn. */
  private UpstreamTurn servedAfterWaiting(String tenant) {
    UpstreamTurn t = turn(tenant).waiting(order.enter(U, turn(tenant), HOUR).toCompletableFuture()
        .join());
    served(t);
    return t;
  }

  private void enter(String tenant) {
    order.enter(U, turn(tenant), HOUR).toCompletableFuture().join();
  }

  @Test
  void aTenantNeitherWaitingNorServedForAMinuteIsForgottenAndAWaitingOneIsNot() {
    servedAfterWaiting("a");
    ticker.advanceMillis(59_999);
    enter("b");
    assertThat(tenants()).as("a was served 59.999 s ago").isEqualTo(2);
    ticker.advanceMillis(1);
    enter("c");
    assertThat(tenants()).as("a is forgotten; b and c wait").isEqualTo(2);
    ticker.advance(Duration.ofMinutes(10));
    enter("d");
    assertThat(tenants()).as("b, c and d wait: none is forgotten").isEqualTo(3);
    assertThat(order.waiting(U).toCompletableFuture().join()).isEqualTo(3);
  }

  @Test
  void aForgottenTenantsSettlementIsLeftAlone() {
    UpstreamTurn a = servedAfterWaiting("a");
    ticker.advance(Duration.ofMinutes(2));
    servedAfterWaiting("b"); // forgets a
    assertThat(tenants()).isOne();
    order.settled(U, a, 5_000).toCompletableFuture().join();
    assertThat(tenants()).as("a is not brought back").isOne();
  }

  @Test
  void aCallAtOnceKeepsNoCounterAndItsSettlementMakesNone() {
    served(turn("a"));
    assertThat(tenants()).as("only the class's last-left counter moved").isZero();
    order.settled(U, turn("a"), 5_000).toCompletableFuture().join();
    assertThat(tenants()).isZero();
  }

  @Test
  void theCountersKeptAreBoundedAndWaitingTenantsStay() {
    UpstreamQueue q = new UpstreamQueue();
    long now = ManualTicker.ORIGIN;
    q.enter("w1", turn("waiting"), HOUR.toNanos(), now);
    for (int i = 0; i < UpstreamQueue.MAX_TENANTS + 10; i++) {
      q.enter("x" + i, turn("t" + i), HOUR.toNanos(), now);
      q.leave("x" + i, now);
    }
    assertThat(q.tenants()).isEqualTo(UpstreamQueue.MAX_TENANTS);
    assertThat(q.first(now)).isEqualTo("w1");
    assertThat(q.waiting(now)).isOne();
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS) // a signal that waited for the listener hangs
  void aSignalTellsTheListenersOnAThreadOfItsOwnWithoutWaitingForThem() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    List<Thread> threads = new CopyOnWriteArrayList<>();
    CompletableFuture<String> heard = new CompletableFuture<>();
    try (AutoCloseable slow = order.listen(name -> {
          threads.add(Thread.currentThread());
          heard.complete(name);
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        })) {
      order.signal("openai");
      assertThat(heard.get(30, TimeUnit.SECONDS)).isEqualTo("openai");
      order.signal("azure"); // returns while the listener still holds the delivery thread
      release.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> threads.size() == 2);
      assertThat(threads).doesNotContain(Thread.currentThread());
    }
  }
}
