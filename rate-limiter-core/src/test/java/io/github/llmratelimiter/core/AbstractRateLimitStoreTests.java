package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The store test suite (TCK): every store, in-memory or distributed, must pass it unchanged.
 *
 * <p>A subclass supplies a fresh, empty store that reads time from the given ticker ({@link
 * StoreTckSupport#newStore}). Every
 * scenario of the composed check is here, in both composition modes, through the public limiters, so the
 * gateway, the hierarchy and the modes are shown to run unchanged on the store.
 */
public abstract class AbstractRateLimitStoreTests extends StoreTckSupport {

  private GatewayLimiter gateway(long rpm, double capacity, double refill, Composition mode) {
    return GatewayLimiter.builder()
        .name("gw")
        .requestsPerMinute(rpm)
        .burst(capacity, refill)
        .composition(mode)
        .store(store)
        .build();
  }

  private GatewayLimiter gateway(
      long limit, Duration window, double capacity, double refill, Composition mode) {
    return GatewayLimiter.builder()
        .name("gw")
        .requestsPerWindow(limit, window)
        .burst(capacity, refill)
        .composition(mode)
        .store(store)
        .build();
  }

  private static Budget windowOnly(String name, long limit, Duration window) {
    return new Budget(name, new WindowLimit(limit, window), null);
  }

  private static Budget bucketOnly(String name, double capacity, double refill) {
    return new Budget(name, null, new BucketLimit(capacity, refill));
  }

  /**
   * Returns how the store under test names {@code key} in {@link StoreAdministration#top}: the key
   * itself, unless the store keeps only a one-way form of keys (a store that hashes secrets);
   * {@code inspect} and {@code reset} always take the key itself.
   *
   * @param key a key as passed to the store
   * @return the key as {@code top} reports it
   */
  protected String topKey(String key) {
    return key;
  }

  private long windowUsed(Budget budget, String key) {
    return admin().inspect(budget, key).map(KeySnapshot::windowUsed).orElse(0L);
  }

  private double tokens(Budget budget, String key) {
    return admin().inspect(budget, key).map(KeySnapshot::tokens).orElse(budget.bucket().capacity());
  }

  // ---- sliding-window log ----

  @Test
  void windowAdmitsLimitThenDeniesWithRpmLimit() {
    Budget b = windowOnly("rpm", 3, Duration.ofMinutes(1));
    for (int i = 2; i >= 0; i--) {
      Decision d = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
      assertThat(d.allowed()).isTrue();
      assertThat(d.remaining()).isEqualTo(i);
      assertThat(d.reason()).isEqualTo(Reason.OK);
      assertThat(d.level()).isEqualTo("rpm");
      ticker.advanceMillis(1000);
    }
    Decision denied = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    assertThat(denied.allowed()).isFalse();
    assertThat(denied.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(denied.remaining()).isZero();
    assertThat(denied.retryable()).isTrue();
    // oldest at t0, now t0 + 3 s: retry = oldest + window - now = 57 s
    assertThat(denied.retryAfterMs()).isEqualTo(57_000);
  }

  @Test
  void windowDenyAppendsNothing() {
    Budget b = windowOnly("rpm", 2, Duration.ofMinutes(1));
    store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    for (int i = 0; i < 5; i++) {
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).reason()).isEqualTo(Reason.RPM_LIMIT);
    }
    assertThat(windowUsed(b, "t")).isEqualTo(2);
    // both admissions were at t0: exactly one window later both have left, none of the denies count
    ticker.advance(Duration.ofMinutes(1));
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).remaining()).isEqualTo(1);
  }

  @Test
  void windowRetryIsFromTheOldestEventAndClearsExactlyThen() {
    Budget b = windowOnly("rpm", 2, Duration.ofSeconds(10));
    store.acquire(b, "t", 1, Composition.SEQUENTIAL); // t0
    ticker.advanceMillis(4000);
    store.acquire(b, "t", 1, Composition.SEQUENTIAL); // t0 + 4 s
    ticker.advanceMillis(1000);
    Decision d = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(5000); // t0 + 10 s - (t0 + 5 s)
    ticker.advanceMillis(4999);
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).retryAfterMs()).isEqualTo(1);
    ticker.advanceMillis(1);
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
  }

  @Test
  void windowRetryRoundsUpNeverDown() {
    Budget b = windowOnly("rpm", 1, Duration.ofSeconds(1));
    store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    ticker.advanceNanos(999_999_999L); // 1 ns before the slot frees
    Decision d = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(1);
    ticker.advanceNanos(1);
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
  }

  @Test
  void windowKeysAreIndependent() {
    Budget b = windowOnly("rpm", 1, Duration.ofMinutes(1));
    assertThat(store.acquire(b, "a", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    assertThat(store.acquire(b, "b", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    assertThat(store.acquire(b, "a", 1, Composition.SEQUENTIAL).allowed()).isFalse();
  }

  @Test
  void windowCountsOneRequestWhateverTheCost() {
    Budget b = windowOnly("rpm", 2, Duration.ofMinutes(1));
    assertThat(store.acquire(b, "t", 500, Composition.SEQUENTIAL).remaining()).isEqualTo(1);
  }

  // ---- token bucket ----

  @Test
  void bucketStartsFullAndDebitsFractionalCosts() {
    Budget b = bucketOnly("burst", 2, 1);
    Decision first = store.acquire(b, "t", 0.5, Composition.SEQUENTIAL);
    assertThat(first.allowed()).isTrue();
    assertThat(first.remaining()).isEqualTo(1); // 1.5 tokens: one whole unit-cost call
    assertThat(store.acquire(b, "t", 1.5, Composition.SEQUENTIAL).allowed()).isTrue();
    Decision denied = store.acquire(b, "t", 0.25, Composition.SEQUENTIAL);
    assertThat(denied.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(denied.retryAfterMs()).isEqualTo(250); // 0.25 / 1 per s
    assertThat(denied.retryable()).isTrue();
  }

  @Test
  void bucketRetryIsDeficitOverRefillRoundedUpAndClearsThen() {
    Budget b = bucketOnly("burst", 1, 3);
    store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    Decision d = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(334); // ceil(1 / 3 * 1000) = ceil(333.33)
    ticker.advanceMillis(333);
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isFalse();
    ticker.advanceMillis(1);
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
  }

  @Test
  void bucketRetryOfAnExactMillisecondAdmitsAfterExactlyThatWait() {
    Budget b = bucketOnly("burst", 1, 10);
    store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    ticker.advanceMillis(70); // 0.7 tokens back
    Decision d = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    assertThat(d.retryAfterMs()).isEqualTo(30);
    ticker.advanceMillis(d.retryAfterMs());
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
  }

  @Test
  void bucketRefillsLazilyUpToCapacity() {
    Budget b = bucketOnly("burst", 5, 1);
    for (int i = 0; i < 5; i++) {
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    }
    ticker.advance(Duration.ofHours(1));
    for (int i = 0; i < 5; i++) {
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    }
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isFalse();
  }

  @Test
  void zeroRefillDeniesWithRetryZeroFlaggedAsNeverClearing() {
    Budget b = bucketOnly("burst", 1, 0);
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    Decision d = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(d.retryAfterMs()).isZero();
    assertThat(d.retryable()).isFalse();
    ticker.advance(Duration.ofDays(365));
    assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isFalse();
  }

  @Test
  void costAboveCapacityNeverFitsAndChargesNothing() {
    Budget b = new Budget("gw", new WindowLimit(5, Duration.ofMinutes(1)), new BucketLimit(2, 1));
    for (Composition mode : Composition.values()) {
      Decision d = store.acquire(b, "t", 2.5, mode);
      assertThat(d.reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
      assertThat(d.retryable()).isFalse();
      assertThat(d.retryAfterMs()).isZero();
    }
    assertThat(windowUsed(b, "t")).isZero();
    assertThat(store.acquire(b, "t", 2, Composition.SEQUENTIAL).allowed()).isTrue();
  }

  // ---- the gateway (window then bucket, under one lock) ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void allowReportsTheSmallerRemainingOfBoth(Composition mode) {
    GatewayLimiter limiter = gateway(10, 3, 1, mode);
    Decision d = limiter.allow("t");
    assertThat(d.allowed()).isTrue();
    assertThat(d.remaining()).isEqualTo(2); // window 9, bucket 2
    assertThat(d.retryAfterMs()).isZero();
    GatewayLimiter windowBound = GatewayLimiter.builder().name("gw2").requestsPerMinute(2)
        .burst(10, 1).composition(mode).store(store).build();
    assertThat(windowBound.allow("t").remaining()).isEqualTo(1); // window 1, bucket 9
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void rpmDenyLeavesTheBucketUntouched(Composition mode) {
    GatewayLimiter limiter = gateway(2, 10, 0, mode);
    limiter.allow("t");
    limiter.allow("t");
    for (int i = 0; i < 3; i++) {
      Decision d = limiter.allow("t");
      assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(d.retryAfterMs()).isEqualTo(60_000);
    }
    assertThat(tokens(limiter.budget(), "t")).isEqualTo(8.0);
  }

  @Test
  void sequentialBurstDenyKeepsTheRpmTimestamp() {
    GatewayLimiter limiter = gateway(10, 1, 1, Composition.SEQUENTIAL);
    assertThat(limiter.allow("t").allowed()).isTrue();
    Decision d = limiter.allow("t");
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(1000); // copied from the bucket, not summed
    assertThat(windowUsed(limiter.budget(), "t")).isEqualTo(2); // counted, not rolled back
  }

  @Test
  void reserveCommitBurstDenyLeavesTheWindowAlone() {
    GatewayLimiter limiter = gateway(10, 1, 1, Composition.RESERVE_COMMIT);
    assertThat(limiter.allow("t").allowed()).isTrue();
    Decision d = limiter.allow("t");
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(1000);
    assertThat(windowUsed(limiter.budget(), "t")).isEqualTo(1);
  }

  @Test
  void sequentialBurstDenialsCanFillTheWindow() {
    // Sequential order's known cost, "RPM slot spent on a burst deny", made visible.
    GatewayLimiter limiter = gateway(3, 1, 0.001, Composition.SEQUENTIAL);
    assertThat(limiter.allow("t").allowed()).isTrue();
    assertThat(limiter.allow("t").reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(limiter.allow("t").reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(limiter.allow("t").reason()).isEqualTo(Reason.RPM_LIMIT);
  }

  @Test
  void modesAgreeWhenBothAllow() {
    GatewayLimiter seq = gateway(5, 3, 1, Composition.SEQUENTIAL);
    GatewayLimiter res = GatewayLimiter.builder().name("gw-res").requestsPerMinute(5).burst(3, 1)
        .composition(Composition.RESERVE_COMMIT).store(store).build();
    for (int i = 0; i < 3; i++) {
      Decision a = seq.allow("t");
      Decision b = res.allow("t");
      assertThat(b.allowed()).isEqualTo(a.allowed()).isTrue();
      assertThat(b.remaining()).isEqualTo(a.remaining());
      assertThat(b.resetAfterMs()).isEqualTo(a.resetAfterMs());
      ticker.advanceMillis(100);
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void tryAcquireChargesExactlyLikeAllow(Composition mode) {
    GatewayLimiter detailed = gateway(4, 2, 1, mode);
    GatewayLimiter bare = GatewayLimiter.builder().name("gw-bare").requestsPerMinute(4)
        .burst(2, 1).composition(mode).store(store).build();
    for (int i = 0; i < 12; i++) {
      double cost = i % 3 == 0 ? 1.5 : 0.5;
      assertThat(bare.tryAcquire("t", cost)).as("call %d", i)
          .isEqualTo(detailed.allow("t", cost).allowed());
      ticker.advanceMillis(700);
    }
    KeySnapshot a = admin().inspect(detailed.budget(), "t").orElseThrow();
    KeySnapshot b = admin().inspect(bare.budget(), "t").orElseThrow();
    assertThat(b.windowUsed()).isEqualTo(a.windowUsed());
    assertThat(b.tokens()).isEqualTo(a.tokens());
    assertThat(bare.tryAcquire("t", 3)).isFalse(); // never fits: nothing charged
    assertThat(admin().inspect(bare.budget(), "t").orElseThrow().windowUsed()).isEqualTo(b.windowUsed());
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void asyncCallsDecideAndChargeExactlyLikeSyncOnes(Composition mode) {
    Budget parent = windowOnly("async-parent", 5, Duration.ofMinutes(1));
    Budget child = Budget.of("async-child", new WindowLimit(3, Duration.ofSeconds(2)),
        new BucketLimit(2, 1));
    List<Decision> sync = new ArrayList<>();
    List<Decision> async = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      double cost = i % 4 == 0 ? 1.5 : 1;
      sync.add(store.acquire(List.of(parent, child), List.of("s", "s/m"), cost, mode));
      async.add(store.acquireAsync(List.of(parent, child), List.of("a", "a/m"), cost, mode)
          .toCompletableFuture().join());
      ticker.advanceMillis(400);
    }
    assertThat(async).isEqualTo(sync);
    assertThat(windowUsed(child, "a/m")).isEqualTo(windowUsed(child, "s/m"));
    assertThat(tokens(child, "a/m")).isEqualTo(tokens(child, "s/m"));
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.acquireAsync(List.of(child), List.of(" "), 1, mode))
        .withMessageContaining("key");
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void twoThreadsOneTenantOneTokenLeftRoomInTheWindow(Composition mode) throws Exception {
    // Two callers race for the last token of one tenant whose window still has room.
    GatewayLimiter limiter = gateway(10, 2, 0, mode);
    assertThat(limiter.allow("t").allowed()).isTrue(); // one token left, window has room
    List<Decision> results = runConcurrently(2, () -> limiter.allow("t"));
    assertThat(results).filteredOn(Decision::allowed).hasSize(1);
    assertThat(results).filteredOn(d -> d.reason() == Reason.BURST_LIMIT).hasSize(1);
    Decision deny = results.stream().filter(Decision::denied).findFirst().orElseThrow();
    assertThat(deny.retryAfterMs()).isZero();
    assertThat(deny.retryable()).isFalse();
    assertThat(windowUsed(limiter.budget(), "t"))
        .isEqualTo(mode == Composition.SEQUENTIAL ? 3 : 2); // both timestamps stay in sequential
  }

  // ---- hierarchies ----

  private HierarchicalLimiter hierarchy(Composition mode) {
    return HierarchicalLimiter.builder()
        .level(Budget.of("org", new WindowLimit(100, Duration.ofMinutes(1)), new BucketLimit(3, 1)))
        .level(Budget.of("key", new WindowLimit(100, Duration.ofMinutes(1)), new BucketLimit(10, 1)))
        .level(windowOnly("model", 2, Duration.ofMinutes(1)))
        .composition(mode)
        .store(store)
        .build();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void hierarchyAdmitsOnlyWhenEveryLevelAdmitsAndNamesTheDenyingLevel(Composition mode) {
    HierarchicalLimiter h = hierarchy(mode);
    assertThat(h.allow(List.of("acme", "k1", "k1/gpt-4o")).allowed()).isTrue();
    assertThat(h.allow(List.of("acme", "k1", "k1/gpt-4o")).allowed()).isTrue();
    Decision model = h.allow(List.of("acme", "k1", "k1/gpt-4o"));
    assertThat(model.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(model.level()).isEqualTo("model");
    Decision sibling = h.allow(List.of("acme", "k1", "k1/gpt-4o-mini"));
    // org bucket: 3 tokens; sequential already spent one more on the model-level deny
    if (mode == Composition.SEQUENTIAL) {
      assertThat(sibling.reason()).isEqualTo(Reason.BURST_LIMIT);
      assertThat(sibling.level()).isEqualTo("org");
    } else {
      assertThat(sibling.allowed()).isTrue();
      assertThat(sibling.remaining()).isZero(); // org bucket now empty
      assertThat(sibling.level()).isEqualTo("org");
    }
  }

  /** Three levels named {@code prefix-org}, {@code prefix-key}, {@code prefix-model}, root first. */
  private static List<Budget> levels(String prefix) {
    return List.of(
        Budget.of(prefix + "-org", new WindowLimit(9, Duration.ofMinutes(1)), new BucketLimit(3, 1)),
        Budget.of(prefix + "-key", new WindowLimit(100, Duration.ofMinutes(1)),
            new BucketLimit(10, 1)),
        windowOnly(prefix + "-model", 2, Duration.ofSeconds(3)));
  }

  private HierarchicalLimiter hierarchy(List<Budget> levels, Composition mode) {
    HierarchicalLimiter.Builder b = HierarchicalLimiter.builder().composition(mode).store(store);
    levels.forEach(b::level);
    return b.build();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void hierarchyDecidesAlikeWhateverOrderItsLevelsWereFirstUsedInAndTryAcquireChargesLikeAllow(
      Composition mode) {
    List<Budget> first = levels("first");
    List<Budget> reversed = levels("reversed");
    List<Budget> bare = levels("bare");
    for (int i = 2; i >= 0; i--) { // a store may order its locks by first use: leaf first here
      assertThat(store.acquire(reversed.get(i), "warm-up", 1, Composition.SEQUENTIAL).allowed())
          .isTrue();
      assertThat(store.acquire(bare.get(i), "warm-up", 1, Composition.SEQUENTIAL).allowed())
          .isTrue();
    }
    HierarchicalLimiter a = hierarchy(first, mode);
    HierarchicalLimiter b = hierarchy(reversed, mode);
    HierarchicalLimiter c = hierarchy(bare, mode);
    String[][] calls = {{"acme", "k1", "k1/m1"}, {"acme", "k1", "k1/m2"}, {"acme", "k2", "k2/m1"}};
    int denied = 0;
    for (int i = 0; i < 40; i++) {
      List<String> keys = List.of(calls[i % 3]);
      double cost = i % 4 == 3 ? 0.5 : 1;
      Decision da = a.allow(keys, cost);
      Decision db = b.allow(keys, cost);
      assertThat(db).as("call %d", i).usingRecursiveComparison().ignoringFields("level")
          .isEqualTo(da);
      assertThat(db.level().replace("reversed-", "")).isEqualTo(da.level().replace("first-", ""));
      assertThat(c.tryAcquire(keys, cost)).as("call %d", i).isEqualTo(da.allowed());
      denied += da.allowed() ? 0 : 1;
      ticker.advanceMillis(i % 5 == 0 ? 900 : 150);
    }
    assertThat(denied).as("denies at some level").isBetween(5, 35);
    for (String[] call : calls) {
      for (int level = 0; level < 3; level++) {
        assertThat(snapshot(bare.get(level), call[level]))
            .isEqualTo(snapshot(first.get(level), call[level]))
            .isEqualTo(snapshot(reversed.get(level), call[level]));
      }
    }
  }

  /** What a key holds under a budget, without its name: window used and tokens. */
  private List<Object> snapshot(Budget budget, String key) {
    return List.of(windowUsed(budget, key), budget.bucket() == null ? 0.0 : tokens(budget, key));
  }

  @Test
  void reserveCommitChargesNoLevelWhenAnyDenies() {
    HierarchicalLimiter h = hierarchy(Composition.RESERVE_COMMIT);
    Budget org = h.levels().get(0);
    Budget key = h.levels().get(1);
    Budget model = h.levels().get(2);
    h.allow(List.of("acme", "k1", "m"));
    h.allow(List.of("acme", "k1", "m"));
    Decision d = h.allow(List.of("acme", "k1", "m"));
    assertThat(d.level()).isEqualTo("model");
    assertThat(windowUsed(org, "acme")).isEqualTo(2);
    assertThat(tokens(org, "acme")).isEqualTo(1.0);
    assertThat(windowUsed(key, "k1")).isEqualTo(2);
    assertThat(tokens(key, "k1")).isEqualTo(8.0);
    assertThat(windowUsed(model, "m")).isEqualTo(2);
  }

  @Test
  void sequentialLeavesTheLevelsBeforeTheDenyingOneCharged() {
    HierarchicalLimiter h = hierarchy(Composition.SEQUENTIAL);
    Budget org = h.levels().get(0);
    Budget key = h.levels().get(1);
    h.allow(List.of("acme", "k1", "m"));
    h.allow(List.of("acme", "k1", "m"));
    Decision d = h.allow(List.of("acme", "k1", "m"));
    assertThat(d.level()).isEqualTo("model");
    assertThat(windowUsed(org, "acme")).isEqualTo(3);
    assertThat(tokens(org, "acme")).isEqualTo(0.0);
    assertThat(windowUsed(key, "k1")).isEqualTo(3);
    assertThat(tokens(key, "k1")).isEqualTo(7.0);
  }

  @Test
  void hierarchyRetryIsCopiedFromTheDenyingLevel() {
    HierarchicalLimiter h = HierarchicalLimiter.builder()
        .level(bucketOnly("org", 1, 2))
        .level(bucketOnly("key", 1, 4))
        .composition(Composition.RESERVE_COMMIT)
        .store(store)
        .build();
    h.allow(List.of("acme", "k1"));
    Decision org = h.allow(List.of("acme", "k2"));
    assertThat(org.level()).isEqualTo("org");
    assertThat(org.retryAfterMs()).isEqualTo(500);
    ticker.advanceMillis(500);
    Decision key = h.allow(List.of("acme", "k1")); // org has 1 again; k1 has 1 too (refill 4/s)
    assertThat(key.allowed()).isTrue();
    ticker.advanceMillis(100); // org 0.2, k1 0.4
    Decision again = h.allow(List.of("acme", "k1"));
    assertThat(again.level()).isEqualTo("org");
    assertThat(again.retryAfterMs()).isEqualTo(400); // org's deficit 0.8 at 2/s, not k1's
  }

  @Test
  void hierarchyCostAboveAnyLevelsCapacityNeverFits() {
    HierarchicalLimiter h = HierarchicalLimiter.builder()
        .level(bucketOnly("org", 100, 1))
        .level(bucketOnly("key", 2, 1))
        .store(store)
        .build();
    Decision d = h.allow(List.of("acme", "k1"), 3);
    assertThat(d.reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(d.level()).isEqualTo("key");
    assertThat(tokens(h.levels().get(0), "acme")).isEqualTo(100.0);
  }

  // ---- what a decision reports: what binds, what remains, what is free ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void noCostIsFreeOnABucketThatNeverRefills(Composition mode) {
    Budget b = bucketOnly("one-shot", 1, 0);
    assertThat(store.acquire(b, "t", 1, mode).allowed()).isTrue();
    for (double tiny : new double[] {1e-9, 5e-10, Double.MIN_VALUE}) {
      Decision d = store.acquire(b, "t", tiny, mode);
      assertThat(d.reason()).as("cost %s", tiny).isEqualTo(Reason.BURST_LIMIT);
      assertThat(d.retryable()).isFalse();
      assertThat(d.retryAfterMs()).isZero();
    }
    // a tiny cost is paid in full; remaining counts exactly the unit-cost calls that then pass
    Decision tiny = store.acquire(b, "u", 1e-9, mode);
    assertThat(tiny.allowed()).isTrue();
    assertThat(tiny.remaining()).isEqualTo(1); // 1 - 1e-9 tokens: within 1e-9 of a unit cost
    Decision unit = store.acquire(b, "u", 1, mode);
    assertThat(unit.allowed()).isTrue();
    assertThat(unit.remaining()).isZero();
    assertThat(store.acquire(b, "u", 1e-9, mode).allowed()).isFalse();
    assertThat(store.acquire(b, "u", Double.MIN_VALUE, mode).allowed()).isFalse();
  }

  @Test
  void aKeyWithinTheToleranceOfAFullBucketIsNeverDroppedAsFresh() {
    Budget b = bucketOnly("one-shot", 1, 0);
    assertThat(store.acquire(b, "t", 1e-10, Composition.SEQUENTIAL).allowed()).isTrue();
    ticker.advance(Duration.ofDays(1));
    runMaintenance();
    assertThat(admin().trackedKeys(b)).isEqualTo(1);
    assertThat(admin().inspect(b, "t")).hasValueSatisfying(
        s -> assertThat(s.tokens()).isEqualTo(1 - 1e-10)); // not forgotten, so not granted back
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aBurstDenyReportsTheSmallestRemainingOfBothComponents(Composition mode) {
    GatewayLimiter limiter = gateway(2, Duration.ofMinutes(1), 3, 0, mode);
    assertThat(limiter.allow("t", 0.5).allowed()).isTrue();
    Decision d = limiter.allow("t", 3);
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(d.retryable()).isFalse();
    if (mode == Composition.SEQUENTIAL) {
      assertThat(d.remaining()).isZero(); // the deny filled the window: no call passes now
      assertThat(limiter.allow("t").reason()).isEqualTo(Reason.RPM_LIMIT);
    } else {
      assertThat(d.remaining()).isEqualTo(1); // the window's one left, not the bucket's two
      assertThat(limiter.allow("t").allowed()).isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aHierarchyDenyReportsTheSmallestRemainingOfEveryLevel(Composition mode) {
    HierarchicalLimiter h = HierarchicalLimiter.builder()
        .level(bucketOnly("org", 2, 1))
        .level(windowOnly("key", 1, Duration.ofMinutes(1)))
        .composition(mode)
        .store(store)
        .build();
    assertThat(h.allow(List.of("acme", "k")).allowed()).isTrue(); // org: 1 token; key: window full
    Decision d = h.allow(List.of("acme", "k"), 1.5);
    assertThat(d.remaining()).isZero(); // the key's full window counts, reached or not
    if (mode == Composition.SEQUENTIAL) {
      assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT); // the first to deny, in order
      assertThat(d.level()).isEqualTo("org");
      assertThat(d.retryAfterMs()).isEqualTo(500);
    } else {
      assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT); // 60 s binds, not the org's 500 ms
      assertThat(d.level()).isEqualTo("key");
      assertThat(d.retryAfterMs()).isEqualTo(60_000);
    }
  }

  @Test
  void reserveCommitReportsABucketThatNeverRefillsBehindAFullWindow() {
    GatewayLimiter limiter = gateway(3, Duration.ofSeconds(10), 2, 0, Composition.RESERVE_COMMIT);
    assertThat(limiter.allow("t", 1.5).allowed()).isTrue();
    assertThat(limiter.allow("t", 0.25).allowed()).isTrue();
    assertThat(limiter.allow("t", 0.25).allowed()).isTrue(); // window full, bucket empty for good
    for (int i = 0; i < 3; i++) {
      Decision d = limiter.allow("t");
      assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
      assertThat(d.retryable()).isFalse();
      assertThat(d.retryAfterMs()).isZero();
      assertThat(d.remaining()).isZero();
      ticker.advance(Duration.ofSeconds(10));
    }
  }

  @Test
  void sequentialReportsAFullWindowFirstEvenBeforeABucketThatNeverRefills() {
    // The design's order: RPM_LIMIT returns before the bucket runs (docs/core.md, "The two
    // composition modes"): the one deny in this mode that is retryable although the call can
    // never pass.
    GatewayLimiter limiter = gateway(3, Duration.ofSeconds(10), 2, 0, Composition.SEQUENTIAL);
    assertThat(limiter.allow("t", 1.5).allowed()).isTrue();
    Decision burst = limiter.allow("t");
    assertThat(burst.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(burst.retryable()).isFalse();
    assertThat(limiter.allow("t").remaining()).isZero(); // the second deny filled the window
    Decision rpm = limiter.allow("t");
    assertThat(rpm.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(rpm.retryable()).isTrue();
    assertThat(rpm.retryAfterMs()).isEqualTo(10_000);
    ticker.advanceMillis(rpm.retryAfterMs());
    assertThat(limiter.allow("t").reason()).isEqualTo(Reason.BURST_LIMIT);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aDenyAdvisesTheWaitThatBinds(Composition mode) {
    GatewayLimiter limiter = gateway(1, Duration.ofSeconds(1), 2, 0.1, mode);
    assertThat(limiter.allow("t", 2).allowed()).isTrue();
    Decision d = limiter.allow("t");
    if (mode == Composition.SEQUENTIAL) {
      assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT); // copied from the window, which ran first
      assertThat(d.retryAfterMs()).isEqualTo(1000);
      return;
    }
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT); // the bucket's 10 s, not the window's 1 s
    assertThat(d.retryAfterMs()).isEqualTo(10_000);
    ticker.advanceMillis(9_999);
    assertThat(limiter.allow("t").allowed()).isFalse();
    ticker.advanceMillis(1);
    assertThat(limiter.allow("t").allowed()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aRetryAtTheEdgeOfTheToleranceAdmitsTheClientThatWaitsIt(Composition mode) {
    // 239,333,333 ns at 3 tokens/s refill 0.717999999 tokens: the call lacks 0.282000001, 1e-9
    // more than 94 ms bring, right at the tolerance of a unit cost
    Budget b = bucketOnly("burst", 1, 3);
    assertThat(store.acquire(b, "t", 1, mode).allowed()).isTrue();
    ticker.advanceNanos(239_333_333);
    Decision d = store.acquire(b, "t", 1, mode);
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
    ticker.advanceMillis(d.retryAfterMs());
    assertThat(store.acquire(b, "t", 1, mode).allowed()).as("after %d ms", d.retryAfterMs()).isTrue();
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aClientThatWaitsTheAdvisedRetryIsAdmittedWhenNothingElseArrives(Composition mode) {
    assertThat(waitOutAdvisedRetries(mode, 17, false)).as("retries waited out").isGreaterThan(100);
  }

  // ---- bad input ----

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "\t"})
  void blankKeysAreRejected(String key) {
    GatewayLimiter limiter = gateway(1, 1, 1, Composition.SEQUENTIAL);
    assertThatIllegalArgumentException().isThrownBy(() -> limiter.allow(key)).withMessageContaining("key");
  }

  @Test
  void nullKeyIsRejected() {
    GatewayLimiter limiter = gateway(1, 1, 1, Composition.SEQUENTIAL);
    assertThatIllegalArgumentException().isThrownBy(() -> limiter.allow(null)).withMessageContaining("key");
  }

  @ParameterizedTest
  @ValueSource(doubles = {0, -1, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY})
  void badCostsAreRejectedNamingTheValue(double cost) {
    GatewayLimiter limiter = gateway(1, 1, 1, Composition.SEQUENTIAL);
    assertThatIllegalArgumentException().isThrownBy(() -> limiter.allow("t", cost))
        .withMessageContaining("cost").withMessageContaining(String.valueOf(cost));
    assertThat(windowUsed(limiter.budget(), "t")).isZero();
  }

  @Test
  void hierarchyKeysMustMatchTheLevels() {
    HierarchicalLimiter h = hierarchy(Composition.SEQUENTIAL);
    assertThatIllegalArgumentException().isThrownBy(() -> h.allow(List.of("acme", "k1")))
        .withMessageContaining("keys");
    assertThatIllegalArgumentException().isThrownBy(() -> h.allow(List.of("acme", " ", "m")))
        .withMessageContaining("keys[1]");
  }

  // ---- inspection and reset ----

  @Test
  void inspectShowsTheStateOfAKeyAndNothingForAnUnknownOne() {
    GatewayLimiter limiter = gateway(10, 4, 1, Composition.SEQUENTIAL);
    limiter.allow("t", 3);
    KeySnapshot s = admin().inspect(limiter.budget(), "t").orElseThrow();
    assertThat(s.budget()).isEqualTo("gw");
    assertThat(s.key()).isEqualTo("t");
    assertThat(s.windowUsed()).isEqualTo(1);
    assertThat(s.windowLimit()).isEqualTo(10);
    assertThat(s.tokens()).isEqualTo(1.0);
    assertThat(s.capacity()).isEqualTo(4.0);
    assertThat(s.nextFreeMs()).isZero();
    limiter.allow("t");
    assertThat(admin().inspect(limiter.budget(), "t").orElseThrow().nextFreeMs()).isEqualTo(1000);
    assertThat(admin().inspect(limiter.budget(), "nobody")).isEmpty();
  }

  @Test
  void topListsTheMostUsedKeysFirst() {
    GatewayLimiter limiter = gateway(10, 100, 0, Composition.SEQUENTIAL);
    for (int i = 0; i < 3; i++) {
      limiter.allow("busy");
    }
    limiter.allow("quiet");
    limiter.allow("busy");
    limiter.allow("middle");
    limiter.allow("middle");
    List<KeySnapshot> top = admin().top(limiter.budget(), 2);
    assertThat(top).extracting(KeySnapshot::key).containsExactly(topKey("busy"), topKey("middle"));
    assertThat(admin().trackedKeys(limiter.budget())).isEqualTo(3);
  }

  @Test
  void resetRestoresAFullBudget() {
    GatewayLimiter limiter = gateway(1, 1, 0, Composition.SEQUENTIAL);
    limiter.allow("t");
    assertThat(limiter.allow("t").allowed()).isFalse();
    assertThat(admin().reset(limiter.budget(), "t")).isTrue();
    assertThat(admin().reset(limiter.budget(), "t")).isFalse();
    assertThat(limiter.allow("t").allowed()).isTrue();
  }

  @Test
  void resetAllRestoresEveryKeyOfEveryBudgetAndForgetsPlans() {
    GatewayLimiter one = gateway(1, 1, 0, Composition.SEQUENTIAL);
    Budget other = windowOnly("other", 1, Duration.ofMinutes(1));
    one.allow("t");
    one.allow("u:with{odd}chars");
    store.acquire(other, "t", 1, Composition.SEQUENTIAL);
    plans().assignPlan("t", "pro");
    assertThat(one.allow("t").allowed()).isFalse();
    assertThat(store.acquire(other, "t", 1, Composition.SEQUENTIAL).allowed()).isFalse();

    admin().resetAll();

    assertThat(admin().trackedKeys(one.budget())).isZero();
    assertThat(admin().trackedKeys(other)).isZero();
    assertThat(admin().inspect(other, "t")).isEmpty();
    assertThat(plans().assignedPlan("t")).isEmpty();
    assertThat(one.allow("t").allowed()).isTrue();
    assertThat(one.allow("u:with{odd}chars").allowed()).isTrue();
    assertThat(store.acquire(other, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    admin().resetAll(); // twice, and on what it just counted again
    assertThat(one.allow("t").allowed()).isTrue();
  }

  // ---- concurrency ----

  @ParameterizedTest
  @EnumSource(Composition.class)
  void manyThreadsOnOneKeyAdmitExactlyTheLimit(Composition mode) throws Exception {
    GatewayLimiter limiter = gateway(50, 1000, 0, mode);
    List<Decision> results = runConcurrently(8, () -> {
      List<Decision> mine = new ArrayList<>();
      for (int i = 0; i < 25; i++) {
        mine.add(limiter.allow("hot"));
      }
      return mine;
    }).stream().flatMap(List::stream).toList();
    assertThat(results).hasSize(200);
    assertThat(results).filteredOn(Decision::allowed).hasSize(50);
    assertThat(results).filteredOn(d -> d.reason() == Reason.RPM_LIMIT).hasSize(150);
    assertThat(windowUsed(limiter.budget(), "hot")).isEqualTo(50);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void siblingsUnderConcurrentCallersNeverOverAdmitTheSharedLevel(Composition mode)
      throws Exception {
    HierarchicalLimiter h = HierarchicalLimiter.builder()
        .level(windowOnly("org", 40, Duration.ofMinutes(1)))
        .level(windowOnly("key", 1000, Duration.ofMinutes(1)))
        .composition(mode)
        .store(store)
        .build();
    AtomicInteger next = new AtomicInteger();
    List<Decision> results = runConcurrently(8, () -> {
      String key = "k" + next.getAndIncrement();
      List<Decision> mine = new ArrayList<>();
      for (int i = 0; i < 15; i++) {
        mine.add(h.allow(List.of("acme", key)));
      }
      return mine;
    }).stream().flatMap(List::stream).toList();
    assertThat(results).filteredOn(Decision::allowed).hasSize(40);
    assertThat(windowUsed(h.levels().get(0), "acme")).isEqualTo(40);
  }
}
