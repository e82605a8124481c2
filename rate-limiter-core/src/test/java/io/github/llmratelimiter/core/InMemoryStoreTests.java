package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What only the in-memory store does: per-key locks, idle-key eviction and the key cap. */
class InMemoryStoreTests {

  private final ManualTicker ticker = new ManualTicker();
  private final Budget budget =
      Budget.of("gw", new WindowLimit(5, Duration.ofSeconds(1)), new BucketLimit(2, 1));

  @Test
  void idleKeysAreDroppedOnceTheirStateIsFresh() {
    InMemoryStore store = new InMemoryStore(ticker, 100, 100);
    store.acquire(budget, "a", 1, Composition.SEQUENTIAL);
    store.cleanUp();
    assertThat(admin(store).trackedKeys(budget)).isEqualTo(1); // "a" is not fresh yet
    ticker.advanceMillis(999);
    store.acquire(budget, "b", 2, Composition.SEQUENTIAL);
    store.cleanUp();
    assertThat(admin(store).trackedKeys(budget)).isEqualTo(2);
    ticker.advanceMillis(1001); // a: window empty, bucket full; b: bucket 1.001 of 2
    store.acquire(budget, "c", 1, Composition.SEQUENTIAL);
    assertThat(admin(store).trackedKeys(budget)).isEqualTo(3); // calls do no housekeeping
    store.cleanUp();
    assertThat(admin(store).inspect(budget, "a")).isEmpty();
    assertThat(admin(store).inspect(budget, "b")).isPresent();
    assertThat(admin(store).trackedKeys(budget)).isEqualTo(2);
  }

  @Test
  void aKeyThatWouldNotBeFreshIsNeverDropped() {
    InMemoryStore store = new InMemoryStore(ticker, 100, 100);
    Budget oneShot = new Budget("one-shot", null, new BucketLimit(2, 0));
    store.acquire(oneShot, "a", 1, Composition.SEQUENTIAL);
    ticker.advance(Duration.ofDays(30));
    store.cleanUp();
    store.cleanUp();
    assertThat(admin(store).inspect(oneShot, "a")).isPresent();
    assertThat(store.acquire(oneShot, "a", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    assertThat(store.acquire(oneShot, "a", 1, Composition.SEQUENTIAL).allowed()).isFalse();
  }

  @Test
  void aFullTableTurnsNewKeysAwayAndKeepsEveryTrackedBudget() {
    InMemoryStore store = new InMemoryStore(ticker, 2, 100); // no background maintenance
    store.acquire(budget, "a", 2, Composition.SEQUENTIAL);
    store.acquire(budget, "b", 2, Composition.SEQUENTIAL);
    Decision c = store.acquire(budget, "c", 1, Composition.SEQUENTIAL);
    assertThat(c.reason()).isEqualTo(Reason.TRACKED_KEYS_LIMIT);
    assertThat(c.retryable()).isTrue();
    assertThat(c.retryAfterMs()).isPositive();
    assertThat(store.acquire(budget, "a", 1, Composition.SEQUENTIAL).reason())
        .isEqualTo(Reason.BURST_LIMIT); // a's empty bucket was not reset to make room
    ticker.advance(Duration.ofSeconds(2)); // a and b are fresh again: the new key's step drops them
    assertThat(store.acquire(budget, "c", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    assertThat(admin(store).trackedKeys(budget)).isEqualTo(1);
  }

  @Test
  void differentKeysDoNotWaitForEachOtherButTheSameKeyDoes() throws Exception {
    CountDownLatch holding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger holderReads = new AtomicInteger();
    Ticker blocking = () -> {
      // The holder's second reading happens inside the key's lock: park there.
      if (Thread.currentThread().getName().equals("holder") && holderReads.incrementAndGet() == 2) {
        holding.countDown();
        awaitUninterruptibly(release);
      }
      return ticker.read();
    };
    InMemoryStore store = new InMemoryStore(blocking, 100, 100);
    store.table(budget); // created here, so the holder's readings are: lookup, then under the lock
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Thread holder = new Thread(() -> store.acquire(budget, "a", 1, Composition.SEQUENTIAL), "holder");
      holder.start();
      assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();
      Future<Decision> otherKey = pool.submit(() -> store.acquire(budget, "b", 1, Composition.SEQUENTIAL));
      assertThat(otherKey.get(30, TimeUnit.SECONDS).allowed()).isTrue();
      Future<Decision> sameKey = pool.submit(() -> store.acquire(budget, "a", 1, Composition.SEQUENTIAL));
      KeyEntry a = store.table(budget).keys.existing("a");
      while (!a.hasQueuedThreads()) { // bounded by the executor's progress; fails the test on timeout
        assertThat(sameKey.isDone()).isFalse();
        Thread.onSpinWait();
      }
      assertThat(sameKey.isDone()).isFalse();
      release.countDown();
      assertThat(sameKey.get(30, TimeUnit.SECONDS).remaining()).isZero(); // bucket 2: a paid twice
      holder.join(30_000);
    } finally {
      release.countDown();
      pool.shutdownNow();
    }
  }

  @Test
  void hierarchiesLockInOneGlobalOrderWhateverTheirLevelOrder() throws Exception {
    // Two hierarchies over the same budgets in opposite orders would deadlock with level-order
    // locking; with the store's global order they finish.
    RateLimitStore store = RateLimitStore.inMemory(ticker);
    Budget x = new Budget("x", WindowLimit.perMinute(1_000_000), null);
    Budget y = new Budget("y", WindowLimit.perMinute(1_000_000), null);
    HierarchicalLimiter xy = HierarchicalLimiter.builder().level(x).level(y).store(store).build();
    HierarchicalLimiter yx = HierarchicalLimiter.builder().level(y).level(x).store(store).build();
    AtomicInteger turn = new AtomicInteger();
    List<Integer> allowed = StoreTckSupport.runConcurrently(4, () -> {
      HierarchicalLimiter mine = turn.getAndIncrement() % 2 == 0 ? xy : yx;
      int n = 0;
      for (int i = 0; i < 20_000; i++) {
        n += mine.allow(List.of("shared", "shared")).allowed() ? 1 : 0;
      }
      return n;
    });
    assertThat(allowed.stream().mapToInt(Integer::intValue).sum()).isEqualTo(80_000);
    assertThat(admin(store).inspect(x, "shared").orElseThrow().windowUsed()).isEqualTo(80_000);
  }

  private static void awaitUninterruptibly(CountDownLatch latch) {
    try {
      latch.await(60, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void aTickerThatThrowsLeavesTheKeyUnlocked() {
    FlakyTicker flaky = new FlakyTicker(ticker);
    InMemoryStore store = new InMemoryStore(flaky, 100, 100);
    BudgetTable table = store.table(budget);
    assertThat(store.tryAcquire(table, "a", 1, Composition.SEQUENTIAL)).isTrue(); // tracked now
    flaky.failing.set(true);
    assertThatThrownBy(() -> store.acquire(table, "a", 1, Composition.SEQUENTIAL))
        .hasMessage("clock unavailable");
    assertThatThrownBy(() -> store.tryAcquire(table, "a", 1, Composition.SEQUENTIAL))
        .hasMessage("clock unavailable");
    flaky.failing.set(false);
    KeyEntry a = table.keys.existing("a");
    assertThat(a.tryLock()).isTrue(); // not left held by the failed calls
    a.unlock();
    assertThat(store.acquire(table, "a", 1, Composition.SEQUENTIAL).allowed()).isTrue();
  }

  @Test
  void unlockingAKeyThatIsNotLockedFails() {
    KeyEntry e = new KeyEntry("a", 0, new InMemoryStore(ticker, 100, 100).table(budget));
    assertThatThrownBy(e::unlock).isInstanceOf(IllegalMonitorStateException.class);
    e.lock();
    e.unlock();
    assertThatThrownBy(e::unlock).isInstanceOf(IllegalMonitorStateException.class);
  }

  @Test
  void modelTokenRetryIsRightOnATickerBelowZero() {
    // System.nanoTime() has an arbitrary origin: readings may be negative
    ManualTicker negative = new ManualTicker();
    Ticker shifted = () -> negative.read() - 2 * ManualTicker.ORIGIN;
    RateLimitStore store = RateLimitStore.inMemory(shifted);
    Budget b = new Budget("tpm", null, null, new ModelTokenLimit(1000, Duration.ofMinutes(1)));
    List<Budget> levels = List.of(b);
    List<String> keys = List.of("a");
    store.reserve(levels, keys, 1, 600, Composition.SEQUENTIAL);
    negative.advance(Duration.ofSeconds(10));
    Reservation denied = store.reserve(levels, keys, 1, 600, Composition.SEQUENTIAL);
    assertThat(denied.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(denied.decision().retryAfterMs()).isEqualTo(50_000); // the 600 leave at t0 + 60 s
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
