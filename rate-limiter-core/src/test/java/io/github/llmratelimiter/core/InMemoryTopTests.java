package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * {@link StoreAdministration#top} of the in-memory store: exact up to 2,048 keys, and above, ranked from
 * the candidates maintenance found, reading at most 2,048 entries per call whatever the number of
 * keys tracked.
 */
class InMemoryTopTests {

  private static final int STEP = InMemoryStore.DEFAULT_MAINTENANCE_STEP;

  private final ManualTicker ticker = new ManualTicker();
  /** Ten calls an hour: a key's use is its calls / 10. */
  private final Budget tenAnHour = new Budget("ten", new WindowLimit(10, Duration.ofHours(1)), null);

  private static void call(RateLimitStore store, Budget budget, String key, int times) {
    for (int i = 0; i < times; i++) {
      assertThat(store.acquire(budget, key, 1, Composition.SEQUENTIAL).allowed()).isTrue();
    }
  }

  /** Runs steps until a pass over the store's one budget has ended; returns how many it took. */
  private static int completePass(InMemoryStore store, BudgetTable table) {
    int steps = 0;
    do {
      assertThat(store.cleanUp()).isLessThanOrEqualTo(STEP);
      steps++;
    } while (table.keys.midPass());
    return steps;
  }

  private static List<String> keys(List<KeySnapshot> snapshots) {
    return snapshots.stream().map(KeySnapshot::key).toList();
  }

  @Test
  void atAMillionKeysTopReadsAtMost2048EntriesAndFindsTheBusiest() {
    InMemoryStore store = new InMemoryStore(ticker, 2_000_000, STEP);
    BudgetTable table = store.table(tenAnHour);
    int quiet = 1_000_000;
    for (int i = 0; i < quiet; i++) {
      call(store, tenAnHour, "quiet-" + i, 1); // use 0.1
    }
    for (int h = 0; h < 5; h++) {
      call(store, tenAnHour, "heavy-" + h, 9 - h); // use 0.9, 0.8, ... 0.5
    }
    long reads = store.topReads();
    assertThat(admin(store).top(tenAnHour, 5)).isEmpty(); // no pass has run: no candidates yet
    assertThat(store.topReads() - reads).isZero();

    int steps = completePass(store, table);
    assertThat(steps).isEqualTo(11); // 1,000,005 keys, 100,000 a step

    reads = store.topReads();
    List<KeySnapshot> top = admin(store).top(tenAnHour, 5);
    assertThat(store.topReads() - reads).isLessThanOrEqualTo(KeyTable.TOP_EXACT_KEYS);
    assertThat(keys(top)).containsExactly("heavy-0", "heavy-1", "heavy-2", "heavy-3", "heavy-4");
    assertThat(top).extracting(KeySnapshot::windowUsed).containsExactly(9L, 8L, 7L, 6L, 5L);

    reads = store.topReads();
    List<KeySnapshot> thousand = admin(store).top(tenAnHour, 1_000);
    assertThat(store.topReads() - reads).isLessThanOrEqualTo(KeyTable.TOP_EXACT_KEYS);
    assertThat(thousand).hasSize(1_000).isSortedAccordingTo(KeySnapshot.BUSIEST_FIRST);
    assertThat(keys(thousand.subList(0, 5))).isEqualTo(keys(top));
    // ties at 0.1 rank by key, as they would among all keys: quiet-0, quiet-1, quiet-10, ...
    assertThat(thousand.get(5).key()).isEqualTo("quiet-0");
    assertThat(thousand.get(7).key()).isEqualTo("quiet-10");

    // A key that gets busy after the pass is listed once maintenance has examined it again;
    // the states listed are always read at the call.
    call(store, tenAnHour, "quiet-999999", 9); // use 1.0 now
    assertThat(keys(admin(store).top(tenAnHour, 1))).containsExactly("heavy-0");
    call(store, tenAnHour, "heavy-0", 1);
    assertThat(admin(store).top(tenAnHour, 1).get(0).windowUsed()).isEqualTo(10);
    completePass(store, table);
    assertThat(keys(admin(store).top(tenAnHour, 2))).containsExactly("heavy-0", "quiet-999999");
  }

  @Test
  void upTo2048KeysTopReadsThemAllWithoutMaintenance() {
    InMemoryStore store = new InMemoryStore(ticker, 10_000, STEP);
    for (int i = 0; i < KeyTable.TOP_EXACT_KEYS - 1; i++) {
      call(store, tenAnHour, "quiet-" + i, 1);
    }
    call(store, tenAnHour, "busy", 3);
    long reads = store.topReads();
    assertThat(keys(admin(store).top(tenAnHour, 1))).containsExactly("busy"); // exact, no step ran
    assertThat(store.topReads() - reads).isEqualTo(KeyTable.TOP_EXACT_KEYS);

    call(store, tenAnHour, "busier", 4); // 2,049 keys: from now on, candidates only
    assertThat(admin(store).top(tenAnHour, 1)).isEmpty();
    store.cleanUp();
    assertThat(keys(admin(store).top(tenAnHour, 2))).containsExactly("busier", "busy");
  }

  @Test
  void aPassUnderWayAlreadyOffersWhatItHasSeen() {
    InMemoryStore store = new InMemoryStore(ticker, 100_000, 1_000);
    BudgetTable table = store.table(tenAnHour);
    for (int i = 0; i < 10_000; i++) {
      call(store, tenAnHour, "quiet-" + i, 1);
    }
    assertThat(admin(store).top(tenAnHour, 5)).isEmpty();
    assertThat(store.cleanUp()).isEqualTo(1_000);
    assertThat(table.keys.midPass()).isTrue();
    assertThat(admin(store).top(tenAnHour, 5)).hasSize(5);
  }

  @Test
  void topRacingCallsAndMaintenanceListsRankedStatesAndEndsExact() throws Exception {
    // Three threads charge 3,000 keys, key i getting i % 10 + 1 calls, while steps of 500 entries
    // run flat out and top is asked again and again; every answer is ranked and within limits,
    // and once all is quiet, two passes later, top is the exact ranking.
    InMemoryStore store = new InMemoryStore(ticker, 100_000, 500);
    int keys = 3_000;
    AtomicBoolean done = new AtomicBoolean();
    CompletableFuture<Integer> reader = CompletableFuture.supplyAsync(() -> {
      int answers = 0;
      while (!done.get()) {
        List<KeySnapshot> top = admin(store).top(tenAnHour, 50);
        assertThat(top).hasSizeLessThanOrEqualTo(50).isSortedAccordingTo(KeySnapshot.BUSIEST_FIRST);
        answers++;
      }
      return answers;
    });
    List<Integer> admitted;
    try (FlatOutMaintenance maintenance = new FlatOutMaintenance(store)) {
      admitted = StoreTckSupport.runConcurrently(3, () -> {
        int n = 0;
        for (int round = 0; round < 10; round++) {
          for (int k = 0; k < keys; k++) {
            if (k % 10 >= round
                && store.acquire(tenAnHour, "k" + k, 1, Composition.SEQUENTIAL).allowed()) {
              n++;
            }
          }
        }
        return n;
      });
    } finally {
      done.set(true);
    }
    assertThat(reader.get(30, TimeUnit.SECONDS)).isPositive();
    // each key k admits min(10, 3 * (k % 10 + 1)) calls
    long expected = 0;
    List<String> busiest = new ArrayList<>();
    for (int k = 0; k < keys; k++) {
      expected += Math.min(10, 3 * (k % 10 + 1));
    }
    assertThat(admitted.stream().mapToLong(Integer::longValue).sum()).isEqualTo(expected);
    for (int k = 0; k < keys; k++) {
      assertThat(admin(store).inspect(tenAnHour, "k" + k).orElseThrow().windowUsed())
          .isEqualTo(Math.min(10, 3 * (k % 10 + 1)));
      if (k % 10 >= 3) {
        busiest.add("k" + k); // the keys at 10 of 10
      }
    }
    BudgetTable table = store.table(tenAnHour);
    store.cleanUp();
    while (table.keys.midPass()) {
      store.cleanUp();
    }
    do {
      store.cleanUp();
    } while (table.keys.midPass());
    busiest.sort(null);
    assertThat(keys(admin(store).top(tenAnHour, 50))).isEqualTo(busiest.subList(0, 50));
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
