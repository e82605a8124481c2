package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The two components used alone, and the validation of every limit. */
class ComponentsTest {

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
        .withMessageContaining("needs a window, a bucket or a model-token limit");
    assertThatIllegalArgumentException().isThrownBy(() -> new Budget("a{b}", WindowLimit.perMinute(1), null))
        .withMessageContaining("must not contain");
  }

  @Test
  void gatewayBuilderRejectsAnEmptyBudgetAndBadLimits() {
    assertThatIllegalArgumentException().isThrownBy(() -> GatewayLimiter.builder().build())
        .withMessageContaining("needs a window, a bucket or a model-token limit");
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
        .withMessageContaining("budget 'b' is already used with other limits");
  }
}
