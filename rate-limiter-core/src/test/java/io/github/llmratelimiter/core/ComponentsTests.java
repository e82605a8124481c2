package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The two components used alone, and the validation of every limit. */
class ComponentsTests {

  private final ManualTicker ticker = new ManualTicker();

  @Test
  void slidingWindowLogWorksAlone() {
    SlidingWindowLog log = SlidingWindowLog.of(2, Duration.ofSeconds(10), ticker);
    assertThat(log.allow("a").remaining()).isEqualTo(1);
    ticker.advanceMillis(2500);
    assertThat(log.allow("a").remaining()).isZero();
    Decision d = log.allow("a");
    assertThat(d.reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(7500);
    assertThat(log.limit()).isEqualTo(new WindowLimit(2, Duration.ofSeconds(10)));
  }

  @Test
  void tokenBucketWorksAlone() {
    TokenBucket bucket = TokenBucket.of(1.5, 0.5, ticker);
    assertThat(bucket.allow("a").allowed()).isTrue();
    Decision d = bucket.allow("a");
    assertThat(d.reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(d.retryAfterMs()).isEqualTo(1000); // deficit 0.5 at 0.5/s
    assertThat(bucket.allow("a", 0.5).allowed()).isTrue();
    assertThat(bucket.allow("a", 2).reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
  }

  @ParameterizedTest
  @ValueSource(longs = {0, -1, Long.MIN_VALUE})
  void windowLimitMustBePositive(long limit) {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new WindowLimit(limit, Duration.ofMinutes(1)))
        .withMessage("limit must be > 0, but was " + limit);
  }

  @Test
  void windowMustBePositive() {
    assertThatIllegalArgumentException().isThrownBy(() -> new WindowLimit(1, Duration.ZERO))
        .withMessage("window must be > 0, but was PT0S");
    assertThatIllegalArgumentException().isThrownBy(() -> new WindowLimit(1, Duration.ofSeconds(-1)))
        .withMessage("window must be > 0, but was PT-1S");
    assertThatIllegalArgumentException().isThrownBy(() -> new WindowLimit(1, null))
        .withMessage("window must not be null");
  }

  @ParameterizedTest
  @ValueSource(doubles = {0, -1, Double.NaN, Double.POSITIVE_INFINITY})
  void capacityMustBeFiniteAndPositive(double capacity) {
    assertThatIllegalArgumentException().isThrownBy(() -> new BucketLimit(capacity, 1))
        .withMessage("capacity must be finite and > 0, but was " + capacity);
  }

  @ParameterizedTest
  @ValueSource(doubles = {-0.001, Double.NaN, Double.POSITIVE_INFINITY})
  void refillMustBeFiniteAndNotNegative(double refill) {
    assertThatIllegalArgumentException().isThrownBy(() -> new BucketLimit(1, refill))
        .withMessage("refillPerSecond must be finite and >= 0, but was " + refill);
  }

  @Test
  void budgetNeedsANameAndAtLeastOneLimit() {
    assertThatIllegalArgumentException().isThrownBy(() -> new Budget(" ", WindowLimit.perMinute(1), null))
        .withMessage("name must not be null or blank, but was ' '");
    assertThatIllegalArgumentException().isThrownBy(() -> new Budget("b", null, null))
        .withMessageContaining("needs a window, a bucket, a model-token or a concurrency limit");
    assertThatIllegalArgumentException().isThrownBy(() -> new Budget("a{b}", WindowLimit.perMinute(1), null))
        .withMessageContaining("must not contain");
  }

  @Test
  void gatewayBuilderRejectsAnEmptyBudgetAndBadLimits() {
    assertThatIllegalArgumentException().isThrownBy(() -> GatewayLimiter.builder().build())
        .withMessageContaining("needs a window, a bucket, a model-token or a concurrency limit");
    assertThatIllegalArgumentException().isThrownBy(() -> GatewayLimiter.builder().burst(1, -2))
        .withMessage("refillPerSecond must be finite and >= 0, but was -2.0");
  }

  @Test
  void hierarchyBuilderRejectsNoLevelsAndRepeatedNames() {
    assertThatIllegalArgumentException().isThrownBy(() -> HierarchicalLimiter.builder().build())
        .withMessageContaining("levels must not be empty");
    Budget b = new Budget("org", WindowLimit.perMinute(1), null);
    assertThatIllegalArgumentException()
        .isThrownBy(() -> HierarchicalLimiter.builder().level(b).level(b))
        .withMessageContaining("'org' was added twice");
  }

  @Test
  void oneStoreRefusesOneNameWithTwoDifferentLimits() {
    RateLimitStore store = RateLimitStore.inMemory(ticker);
    store.acquire(new Budget("b", WindowLimit.perMinute(1), null), "k", 1, Composition.SEQUENTIAL);
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.acquire(new Budget("b", WindowLimit.perMinute(2), null), "k", 1,
            Composition.SEQUENTIAL))
        .withMessageContaining("budget 'b' is already used with other defaults");
  }

  @Test
  void oneStoreTakesAVariantButNotAnotherBudgetOfTheSameName() {
    RateLimitStore store = RateLimitStore.inMemory(ticker);
    Budget free = new Budget("b", WindowLimit.perMinute(1), new BucketLimit(2, 1));
    Budget pro = free.variant(WindowLimit.perMinute(5), new BucketLimit(4, 2), null, null);
    assertThat(pro.name()).isEqualTo("b");
    assertThat(pro.defaults()).isSameAs(free);
    assertThat(pro.isVariant()).isTrue();
    assertThat(store.acquire(free, "k", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    assertThat(store.acquire(pro, "k", 1, Composition.SEQUENTIAL).allowed()).isTrue();
    // a budget of the same name that is not a variant of these defaults is still refused
    Budget other = new Budget("b", WindowLimit.perMinute(5), new BucketLimit(4, 2));
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.acquire(other, "k", 1, Composition.SEQUENTIAL))
        .withMessageContaining("budget 'b' is already used with other defaults");
    // and so is a variant of other defaults
    Budget foreign = other.variant(WindowLimit.perMinute(9), new BucketLimit(4, 2), null, null);
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.acquire(foreign, "k", 1, Composition.SEQUENTIAL))
        .withMessageContaining("budget 'b' is already used with other defaults");
  }

  @Test
  void aVariantKeepsItsDefaultsComponentsAndWindowLengths() {
    Budget free = new Budget("b", WindowLimit.perMinute(10), null,
        ModelTokenLimit.perMinute(1000), ConcurrencyLimit.of(2));
    assertThat(free.variant(WindowLimit.perMinute(10), null, ModelTokenLimit.perMinute(1000),
        ConcurrencyLimit.of(2))).isSameAs(free);
    Budget pro = free.variant(WindowLimit.perMinute(60), null, ModelTokenLimit.perMinute(5000),
        new ConcurrencyLimit(8, Duration.ofMinutes(2)));
    assertThat(pro.variant(WindowLimit.perMinute(20), null, ModelTokenLimit.perMinute(1000),
        ConcurrencyLimit.of(2)).variantOf()).as("a variant of a variant is one of the defaults")
        .isSameAs(free);
    assertThatIllegalArgumentException()
        .isThrownBy(() -> free.variant(WindowLimit.perMinute(60), new BucketLimit(5, 1),
            ModelTokenLimit.perMinute(1000), ConcurrencyLimit.of(2)))
        .withMessageContaining("bucket must be null");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> free.variant(WindowLimit.perMinute(60), null, null, ConcurrencyLimit.of(2)))
        .withMessageContaining("modelTokens must be set");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> free.variant(new WindowLimit(60, Duration.ofHours(1)), null,
            ModelTokenLimit.perMinute(1000), ConcurrencyLimit.of(2)))
        .withMessage("a variant counts window over its defaults' window PT1M, but was PT1H");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new Budget("c", WindowLimit.perMinute(1), null, null, null, free))
        .withMessage("a variant keeps its defaults' name 'b', but was 'c'");
  }

  @Test
  void concurrencyLimitsAreChecked() {
    assertThat(ConcurrencyLimit.of(3).leaseTimeout()).isEqualTo(Duration.ofMinutes(10));
    assertThatIllegalArgumentException().isThrownBy(() -> ConcurrencyLimit.of(0))
        .withMessage("limit must be > 0, but was 0");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new ConcurrencyLimit(1, Duration.ZERO))
        .withMessage("leaseTimeout must be > 0, but was PT0S");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new ConcurrencyLimit(1, Duration.ofDays(2)))
        .withMessage("leaseTimeout must be at most PT24H, but was PT48H");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new ConcurrencyLimit(1, null))
        .withMessage("leaseTimeout must not be null");
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aPlainAcquireOnABudgetThatLimitsConcurrencyIsRefused(Composition mode) {
    RateLimitStore store = RateLimitStore.inMemory(ticker);
    GatewayLimiter limiter = GatewayLimiter.builder().name("c").concurrency(2).composition(mode)
        .store(store).build();
    assertThatIllegalArgumentException().isThrownBy(() -> limiter.allow("k"))
        .withMessageContaining("budget 'c' limits concurrency");
    assertThatIllegalArgumentException().isThrownBy(() -> limiter.tryAcquire("k", 1))
        .withMessageContaining("call reserve");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> store.acquire(List.of(new Budget("o", WindowLimit.perMinute(5), null),
            limiter.budget()), List.of("o", "k"), 1, mode))
        .withMessageContaining("budget 'c' limits concurrency");
    assertThat(store.administration().orElseThrow().trackedKeys(limiter.budget())).isZero();
  }
}
