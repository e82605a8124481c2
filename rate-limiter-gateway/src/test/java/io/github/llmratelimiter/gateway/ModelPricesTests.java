package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Costs are exact integers: priced per million tokens, rounded up once per call, never floated. */
class ModelPricesTests {

  private static final Map<String, BigDecimal[]> PRICES = Map.of(
      "gpt-4o", new BigDecimal[] {new BigDecimal("2.50"), new BigDecimal("10"), new BigDecimal("1.25")},
      "gpt-4o-mini", new BigDecimal[] {new BigDecimal("0.15"), new BigDecimal("0.6"), new BigDecimal("0.075")},
      "odd", new BigDecimal[] {new BigDecimal("0.000001"), new BigDecimal("3.333333"), new BigDecimal("0.999999")});

  private static final ModelPrices TABLE = ModelPrices.of(Map.of(
      "gpt-4o", price("gpt-4o"), "gpt-4o-mini", price("gpt-4o-mini"), "odd", price("odd")), null);

  private static ModelPrices.Price price(String model) {
    BigDecimal[] p = PRICES.get(model);
    return ModelPrices.Price.of(p[0], p[1], p[2]);
  }

  /** The cost of a usage in currency units, computed independently with BigDecimal. */
  private static BigDecimal expected(String model, long prompt, long completion, long cached) {
    BigDecimal[] p = PRICES.get(model);
    BigDecimal sum = BigDecimal.valueOf(prompt - cached).multiply(p[0])
        .add(BigDecimal.valueOf(cached).multiply(p[2]))
        .add(BigDecimal.valueOf(completion).multiply(p[1]));
    // per million tokens, in micro-units: the amount itself, rounded up to a whole micro-unit
    return sum.setScale(0, RoundingMode.CEILING);
  }

  @Test
  void tenThousandRandomUsagesSumToTheirExactPricesInMicroUnits() {
    Random random = new Random(22);
    String[] models = {"gpt-4o", "gpt-4o-mini", "odd"};
    long sum = 0;
    BigDecimal expected = BigDecimal.ZERO;
    for (int i = 0; i < 10_000; i++) {
      String model = models[random.nextInt(models.length)];
      long prompt = random.nextInt(200_000);
      long completion = random.nextInt(20_000);
      long cached = prompt == 0 ? 0 : random.nextInt((int) prompt + 1);
      long cost = TABLE.cost(model, ModelUsage.of(prompt, completion, cached));
      assertThat(BigDecimal.valueOf(cost)).isEqualTo(expected(model, prompt, completion, cached));
      sum += cost;
      expected = expected.add(expected(model, prompt, completion, cached));
    }
    assertThat(BigDecimal.valueOf(sum)).isEqualTo(expected);
  }

  @Test
  void aCallIsRoundedUpOnceToTheMicroUnit() {
    // 1 token at 2.50 per million = 2.5 micro-units -> 3; 3 tokens = 7.5 -> 8 (not 3 x 3)
    assertThat(TABLE.cost("gpt-4o", ModelUsage.of(1, 0, 0))).isEqualTo(3);
    assertThat(TABLE.cost("gpt-4o", ModelUsage.of(3, 0, 0))).isEqualTo(8);
    // 1,000,000 prompt tokens of which 400,000 cached, 1,000 completion: 1.5 + 0.5 + 0.01
    assertThat(TABLE.cost("gpt-4o", ModelUsage.of(1_000_000, 1_000, 400_000)))
        .isEqualTo(2_010_000);
  }

  @Test
  void aTotalAloneIsPricedAtTheHigherPriceAndTheEstimateBoundsEverySplit() {
    assertThat(TABLE.cost("gpt-4o", ModelUsage.ofTotal(100_000))).isEqualTo(1_000_000);
    long estimate = TABLE.estimate("gpt-4o", 100_000);
    assertThat(estimate).isEqualTo(1_000_000);
    for (long prompt = 0; prompt <= 100_000; prompt += 5_000) {
      assertThat(TABLE.cost("gpt-4o", ModelUsage.of(prompt, 100_000 - prompt, prompt / 2)))
          .isLessThanOrEqualTo(estimate);
    }
  }

  @Test
  void aModelWithoutAPriceCostsNothingUnlessThereIsADefault() {
    assertThat(TABLE.cost("unknown", ModelUsage.of(10, 10, 0))).isZero();
    ModelPrices withDefault = ModelPrices.of(Map.of(), price("gpt-4o-mini"));
    assertThat(withDefault.cost("unknown", ModelUsage.of(1_000_000, 0, 0))).isEqualTo(150_000);
    assertThat(withDefault.cost(null, ModelUsage.of(0, 1_000_000, 0))).isEqualTo(600_000);
  }

  @Test
  void amountsWithMoreThanSixDecimalsOrNegativeAreRejected() {
    assertThatThrownBy(() -> ModelPrices.Price.micros("input", new BigDecimal("0.0000001")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("input")
        .hasMessageContaining("6 decimals");
    assertThatThrownBy(() -> ModelPrices.Price.micros("output", new BigDecimal("-1")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("output");
    assertThat(ModelPrices.Price.micros("input", new BigDecimal("1.500000000"))).isEqualTo(1_500_000);
  }

  @Test
  void hugeUsagesSaturateInsteadOfOverflowing() {
    ModelPrices expensive = ModelPrices.of(Map.of(), new ModelPrices.Price(Long.MAX_VALUE,
        Long.MAX_VALUE, Long.MAX_VALUE));
    assertThat(expensive.cost("m", ModelUsage.of(Long.MAX_VALUE / 2, 0, 0)))
        .isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void costsEitherSideOfTheLongRangeAreExactOrSaturate() {
    long micros = 1_000_003; // 1.000003 per million tokens
    ModelPrices prices = ModelPrices.of(Map.of(), new ModelPrices.Price(micros, micros, micros));
    long fits = Long.MAX_VALUE / micros; // tokens whose product with the price fits in a long
    for (long tokens : new long[] {fits - 1, fits, fits + 1, 2 * fits}) {
      BigDecimal exact = BigDecimal.valueOf(tokens).multiply(BigDecimal.valueOf(micros))
          .divide(BigDecimal.valueOf(1_000_000)).setScale(0, RoundingMode.CEILING);
      long expected = exact.min(BigDecimal.valueOf(Long.MAX_VALUE)).longValueExact();
      assertThat(prices.cost("m", ModelUsage.of(tokens, 0, 0))).as("prompt %d", tokens)
          .isEqualTo(expected);
      assertThat(prices.estimate("m", tokens)).as("estimate %d", tokens).isEqualTo(expected);
    }
    // each item fits, their sum does not
    long half = fits / 2 + 1;
    BigDecimal sum = BigDecimal.valueOf(2 * half).multiply(BigDecimal.valueOf(micros))
        .divide(BigDecimal.valueOf(1_000_000)).setScale(0, RoundingMode.CEILING);
    assertThat(prices.cost("m", ModelUsage.of(half, half, 0)))
        .isEqualTo(sum.min(BigDecimal.valueOf(Long.MAX_VALUE)).longValueExact());
  }
}
