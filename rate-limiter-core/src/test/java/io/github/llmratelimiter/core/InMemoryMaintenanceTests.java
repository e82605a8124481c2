package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The in-memory store's maintenance: idle keys leave in bounded steps that no call has to trigger,
 * the tracked count becomes true, and no key that a drop would hand budget is ever dropped.
 */
class InMemoryMaintenanceTests {

  private final ManualTicker ticker = new ManualTicker();
  private final Budget perSecond = new Budget("rps", new WindowLimit(5, Duration.ofSeconds(1)), null);

  /** Tracks {@code n} keys named {@code prefix0...}, each charged once. */
  private static void charge(RateLimitStore store, Budget budget, String prefix, int n) {
    for (int i = 0; i < n; i++) {
      assertThat(store.acquire(budget, prefix + i, 1, Composition.SEQUENTIAL).allowed()).isTrue();
    }
  }

  @Test
  void theKeysOfABudgetNoCallTouchesAgainLeaveAStepAtATime() {
    InMemoryStore store = new InMemoryStore(ticker, 10_000, 100);
    charge(store, perSecond, "k", 1_000);
    assertThat(store.cleanUp()).isEqualTo(100); // nothing is fresh yet: examined, kept
    assertThat(admin(store).trackedKeys(perSecond)).isEqualTo(1_000);
    ticker.advance(Duration.ofSeconds(1)); // every key is fresh now; no call comes any more
    for (int step = 1; step <= 10; step++) {
      // the pass under way goes on: its last 900 keys first, then a new pass from the start
      assertThat(store.cleanUp()).isEqualTo(100);
    }
    assertThat(admin(store).trackedKeys(perSecond)).isZero();
    assertThat(store.cleanUp()).isZero();
  }

  @Test
  void everyStepExaminesAtMostItsBoundAndEachDropIsAKeyItExamined() {
    InMemoryStore store = new InMemoryStore(ticker, 10_000, 64);
    charge(store, perSecond, "k", 1_000);
    ticker.advance(Duration.ofSeconds(1));
    long tracked = admin(store).trackedKeys(perSecond);
    int steps = 0;
    while (tracked > 0) {
      int examined = store.cleanUp();
      steps++;
      long now = admin(store).trackedKeys(perSecond);
      assertThat(examined).isBetween(1, 64);
      assertThat(tracked - now).isEqualTo(examined); // all fresh: every key examined is dropped
      tracked = now;
    }
    assertThat(steps).isEqualTo(16); // ceil(1,000 / 64)
  }

  @Test
  void aChargedBucketThatNeverRefillsSurvivesEveryPassAndTheCountIsExact() {
    InMemoryStore store = new InMemoryStore(ticker, 10_000, 100);
    Budget oneShot = new Budget("one-shot", null, new BucketLimit(2, 0));
    charge(store, oneShot, "charged", 300);
    Budget refilling = new Budget("refilling", null, new BucketLimit(2, 1));
    charge(store, refilling, "idle", 700);
    ticker.advance(Duration.ofDays(30));
    for (int i = 0; i < 30; i++) {
      store.cleanUp();
    }
    assertThat(admin(store).trackedKeys(refilling)).isZero();
    assertThat(admin(store).trackedKeys(oneShot)).isEqualTo(300);
    for (int i = 0; i < 300; i++) {
      assertThat(admin(store).inspect(oneShot, "charged" + i).orElseThrow().tokens()).isEqualTo(1.0);
    }
    assertThat(store.acquire(oneShot, "charged0", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    assertThat(store.acquire(oneShot, "charged0", 1, Composition.SEQUENTIAL).allowed()).isFalse();
  }

  @Test
  void everyBudgetIsEmptiedWithinTheStatedNumberOfSteps() {
    // ceil(2T / step) + 2 steps, whichever budget the steps happen to be in
    int step = 100;
    InMemoryStore store = new InMemoryStore(ticker, 10_000, step);
    List<Budget> budgets = new ArrayList<>();
    int[] sizes = {1_000, 10, 1, 450, 2_000};
    int total = 0;
    for (int b = 0; b < sizes.length; b++) {
      budgets.add(new Budget("b" + b, new WindowLimit(1, Duration.ofSeconds(1)), null));
      charge(store, budgets.get(b), "k", sizes[b]);
      total += sizes[b];
    }
    for (int i = 0; i < 7; i++) {
      store.cleanUp(); // the steps stop somewhere in the middle of some budget
    }
    ticker.advance(Duration.ofSeconds(1));
    int bound = (2 * total + step - 1) / step + 2;
    int steps = 0;
    while (budgets.stream().anyMatch(b -> admin(store).trackedKeys(b) > 0)) {
      assertThat(store.cleanUp()).isLessThanOrEqualTo(step);
      steps++;
      assertThat(steps).isLessThanOrEqualTo(bound);
    }
  }

  @Test
  void aNewKeyInAFullBudgetRunsOneBoundedStep() {
    InMemoryStore store = new InMemoryStore(ticker, 5_000, 100_000);
    charge(store, perSecond, "k", 5_000);
    assertThat(store.acquire(perSecond, "new", 1, Composition.SEQUENTIAL).reason())
        .isEqualTo(Reason.TRACKED_KEYS_LIMIT); // its step found nothing fresh
    ticker.advance(Duration.ofSeconds(1)); // all 5,000 are fresh now
    assertThat(store.acquire(perSecond, "new", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    // the step examined 1,000 of them (all fresh, all dropped), not the whole budget
    assertThat(admin(store).trackedKeys(perSecond)).isEqualTo(5_000 - KeyTable.FULL_TABLE_STEP + 1);
  }

  @Test
  void theSchedulerRunsTheStepsAndCloseCancelsThem() {
    CapturingScheduler scheduler = new CapturingScheduler();
    RateLimitStore store = RateLimitStore.inMemory(ticker, 100, scheduler);
    assertThat(scheduler.tasks).hasSize(1);
    charge(store, perSecond, "k", 50);
    ticker.advance(Duration.ofSeconds(1));
    assertThat(admin(store).trackedKeys(perSecond)).isEqualTo(50); // nothing ran yet
    scheduler.tasks.get(0).run();
    assertThat(admin(store).trackedKeys(perSecond)).isZero();
    store.close();
    assertThat(scheduler.futures.get(0).isCancelled()).isTrue();
    store.close(); // twice does nothing more
    assertThat(store.acquire(perSecond, "k0", 1, Composition.SEQUENTIAL).allowed()).isTrue();
  }

  @Test
  void aStoreNobodyClosedIsNotKeptAliveByItsScheduleWhichThenStops() {
    CapturingScheduler scheduler = new CapturingScheduler();
    WeakReference<RateLimitStore> store = dropped(scheduler);
    for (int i = 0; i < 100 && store.get() != null; i++) {
      System.gc(); // bounded: the store is only weakly reachable
    }
    assertThat(store.get()).isNull();
    scheduler.tasks.get(0).run();
    assertThat(scheduler.futures.get(0).isCancelled()).isTrue();
  }

  private WeakReference<RateLimitStore> dropped(MaintenanceScheduler scheduler) {
    RateLimitStore store = RateLimitStore.inMemory(ticker, 100, scheduler);
    charge(store, perSecond, "k", 10);
    return new WeakReference<>(store);
  }

  @Test
  void aStepThatFailsDoesNotStopTheNextOnes() {
    FlakyTicker flaky = new FlakyTicker(ticker);
    CapturingScheduler scheduler = new CapturingScheduler();
    RateLimitStore store = RateLimitStore.inMemory(flaky, 100, scheduler);
    charge(store, perSecond, "k", 10);
    ticker.advance(Duration.ofSeconds(1));
    flaky.failing.set(true);
    scheduler.tasks.get(0).run(); // logged, not thrown: a scheduler would stop a task that throws
    assertThat(admin(store).trackedKeys(perSecond)).isEqualTo(10);
    flaky.failing.set(false);
    scheduler.tasks.get(0).run();
    assertThat(admin(store).trackedKeys(perSecond)).isZero();
  }

  @Test
  void theDefaultStoreKeepsItselfTidyOnTheSharedDaemonThread() {
    AtomicReference<Thread> reader = new AtomicReference<>();
    Ticker recording = () -> {
      if (Thread.currentThread().getName().equals("rate-limiter-maintenance")) {
        reader.set(Thread.currentThread());
      }
      return ticker.read();
    };
    RateLimitStore store = RateLimitStore.inMemory(recording);
    try {
      charge(store, perSecond, "k", 100);
      ticker.advance(Duration.ofSeconds(1));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (admin(store).trackedKeys(perSecond) > 0) { // the shared thread runs a step every second
        assertThat(System.nanoTime()).as("swept within 30 s").isLessThan(deadline);
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
      }
      assertThat(reader.get()).isNotNull();
      assertThat(reader.get().isDaemon()).isTrue();
    } finally {
      store.close();
    }
  }

  @Test
  void badArgumentsAreNamed() {
    assertThatThrownBy(() -> MaintenanceScheduler.every(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("interval must be > 0, but was PT0S");
    assertThatThrownBy(() -> MaintenanceScheduler.every(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("interval must not be null");
    assertThatThrownBy(() -> MaintenanceScheduler.every(Duration.ofDays(365L * 300)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("interval must be at most");
    assertThatThrownBy(() -> RateLimitStore.inMemory(ticker, 10, null))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("scheduler must not be null");
    assertThatThrownBy(() -> RateLimitStore.inMemory(ticker, 10, task -> null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("the scheduler's future must not be null");
  }

  @Test
  void maintenanceRacingCallsNeverLosesAChargeAndLeavesATrueCount() throws Exception {
    // Each key admits one call per second. Every round, three threads call each of 100 keys five
    // times while steps of 7 entries run flat out, so steps often meet a key in use; between rounds
    // the clock moves a second, so each key is fresh and may be dropped while a caller is about to
    // charge it. A charge lost on a dropped entry would admit a second call in the round.
    InMemoryStore store = new InMemoryStore(ticker, 1_000_000, 7);
    Budget once = new Budget("once", new WindowLimit(1, Duration.ofSeconds(1)), null);
    int keys = 100;
    int rounds = 200;
    AtomicIntegerArray admitted = new AtomicIntegerArray(keys);
    try (FlatOutMaintenance maintenance = new FlatOutMaintenance(store)) {
      for (int round = 1; round <= rounds; round++) {
        StoreTckSupport.runConcurrently(3, () -> {
          for (int k = 0; k < keys; k++) {
            for (int call = 0; call < 5; call++) {
              if (store.acquire(once, "k" + k, 1, Composition.SEQUENTIAL).allowed()) {
                admitted.incrementAndGet(k);
              }
            }
          }
          return null;
        });
        for (int k = 0; k < keys; k++) {
          assertThat(admitted.get(k)).as("admissions of k%d by round %d", k, round).isEqualTo(round);
        }
        // every key is charged: none dropped. The count is read while a step may still be inside
        // the map's removal of an entry retired at the round's start (its node gone, the map's
        // size counter not yet lowered), so it must settle to exactly the number of keys.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (admin(store).trackedKeys(once) != keys && System.nanoTime() < deadline) {
          Thread.onSpinWait();
        }
        assertThat(admin(store).trackedKeys(once)).isEqualTo(keys);
        ticker.advance(Duration.ofSeconds(1));
      }
    }
    for (int i = 0; i < 2 * keys / 7 + 2; i++) {
      store.cleanUp();
    }
    assertThat(admin(store).trackedKeys(once)).isZero();
  }

  /** Keeps each task and its future; runs nothing unless the test does. */
  static final class CapturingScheduler implements MaintenanceScheduler {

    final List<Runnable> tasks = new ArrayList<>();
    final List<CompletableFuture<Void>> futures = new ArrayList<>();

    @Override
    public Future<?> schedule(Runnable maintenance) {
      tasks.add(maintenance);
      CompletableFuture<Void> f = new CompletableFuture<>();
      futures.add(f);
      return f;
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
