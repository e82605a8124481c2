package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.gateway.ModelPrices;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Quotas, prices and shadow mode from the properties: every level carries quotas, inherited field
 * by field; invalid values and cost quotas without prices stop start-up naming the property.
 */
class QuotaPropertiesTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class));

  private static final RateLimitKey KEY = RateLimitKey.of("sk-quota-0123456789", "gpt-4o");

  @Test
  void runWhenPolicyHasQuotasShouldTranslateThemWithUnitPeriodZoneThresholdsAndEnforce() {
    runner.withPropertyValues(
            "ratelimiter.quota-zone=Europe/Berlin",
            "ratelimiter.policies.chat.quotas.daily-tokens.unit=tokens",
            "ratelimiter.policies.chat.quotas.daily-tokens.limit=2000000",
            "ratelimiter.policies.chat.quotas.daily-tokens.period=day",
            "ratelimiter.policies.chat.quotas.daily-tokens.thresholds=50,80,100",
            "ratelimiter.policies.chat.quotas.monthly-spend.unit=cost",
            "ratelimiter.policies.chat.quotas.monthly-spend.limit=50.25",
            "ratelimiter.policies.chat.quotas.monthly-spend.period=month",
            "ratelimiter.policies.chat.quotas.monthly-spend.enforce=false",
            "ratelimiter.prices.default.input=1",
            "ratelimiter.prices.default.output=2")
        .run(context -> {
          assertThat(context).hasNotFailed();
          RateLimitPolicy chat = context.getBean(RateLimitPolicies.class).policy("chat");
          assertThat(chat.hasQuotas()).isTrue();
          ZoneId berlin = ZoneId.of("Europe/Berlin");
          assertThat(chat.levels().get(0).budget().quotas()).containsExactly(
              new QuotaLimit("daily-tokens", QuotaUnit.TOKENS, 2_000_000, QuotaPeriod.DAY, berlin,
                  List.of(50, 80, 100), true),
              new QuotaLimit("monthly-spend", QuotaUnit.COST, 50_250_000, QuotaPeriod.MONTH, berlin,
                  List.of(), false));
          assertThat(context.getBean(RateLimitPolicies.class).policy(null).hasQuotas()).isFalse();
        });
  }

  @Test
  void runWhenModelAndPlanSetQuotaFieldsShouldInheritTheRestFromThePolicy() {
    runner.withPropertyValues(
            "ratelimiter.policies.chat.quotas.daily.unit=requests",
            "ratelimiter.policies.chat.quotas.daily.limit=100",
            "ratelimiter.policies.chat.quotas.daily.period=day",
            "ratelimiter.policies.chat.models.gpt-4o.quotas.daily.limit=10",
            "ratelimiter.policies.chat.models.gpt-4o.quotas.hourly.unit=tokens",
            "ratelimiter.policies.chat.models.gpt-4o.quotas.hourly.limit=5000",
            "ratelimiter.policies.chat.models.gpt-4o.quotas.hourly.period=hour",
            "ratelimiter.plans.pro.policies.chat.quotas.daily.limit=1000",
            "ratelimiter.plans.pro.policies.chat.quotas.weekly.unit=requests",
            "ratelimiter.plans.pro.policies.chat.quotas.weekly.limit=5000",
            "ratelimiter.plans.pro.policies.chat.quotas.weekly.period=week")
        .run(context -> {
          assertThat(context).hasNotFailed();
          RateLimitPolicy chat = context.getBean(RateLimitPolicies.class).policy("chat");
          Budget model = chat.budgets(KEY).get(0);
          assertThat(model.name()).isEqualTo("chat/gpt-4o");
          assertThat(model.quotas()).containsExactly(
              QuotaLimit.of("daily", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY),
              QuotaLimit.of("hourly", QuotaUnit.TOKENS, 5000, QuotaPeriod.HOUR));
          Budget pro = chat.budgets(RateLimitKey.of("sk-quota-0123456789", null), "pro").get(0);
          assertThat(pro.isVariant()).isTrue();
          assertThat(pro.quotas()).containsExactly(
              QuotaLimit.of("daily", QuotaUnit.REQUESTS, 1000, QuotaPeriod.DAY),
              QuotaLimit.of("weekly", QuotaUnit.REQUESTS, 5000, QuotaPeriod.WEEK));
          // the plan's model budget keeps the model's quotas, its daily limit the model's own;
          // quotas are listed from the least specific level that names them
          assertThat(chat.budgets(KEY, "pro").get(0).quotas()).containsExactly(
              QuotaLimit.of("daily", QuotaUnit.REQUESTS, 10, QuotaPeriod.DAY),
              QuotaLimit.of("weekly", QuotaUnit.REQUESTS, 5000, QuotaPeriod.WEEK),
              QuotaLimit.of("hourly", QuotaUnit.TOKENS, 5000, QuotaPeriod.HOUR));
        });
  }

  @Test
  void runWhenTopLevelQuotaIsSetShouldApplyToTheDefaultPolicyAndBeInheritedByNamedOnes() {
    runner.withPropertyValues(
            "ratelimiter.quotas.daily.unit=requests",
            "ratelimiter.quotas.daily.limit=100",
            "ratelimiter.quotas.daily.period=day",
            "ratelimiter.policies.batch.quotas.daily.limit=5")
        .run(context -> {
          RateLimitPolicies policies = context.getBean(RateLimitPolicies.class);
          assertThat(policies.policy(null).levels().get(0).budget().quotas())
              .containsExactly(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 100, QuotaPeriod.DAY));
          assertThat(policies.policy("batch").levels().get(0).budget().quotas())
              .containsExactly(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 5, QuotaPeriod.DAY));
          assertThat(policies.policy("batch").levels().get(0).budget().quotas().get(0).zone())
              .isEqualTo(ZoneOffset.UTC);
        });
  }

  @Test
  void runWhenPolicyIsInShadowModeShouldMakeEveryQuotaShadowAndMarkThePolicy() {
    runner.withPropertyValues(
            "ratelimiter.policies.trial.enforce=false",
            "ratelimiter.policies.trial.quotas.daily.unit=requests",
            "ratelimiter.policies.trial.quotas.daily.limit=3",
            "ratelimiter.policies.trial.quotas.daily.period=day",
            "ratelimiter.policies.trial.quotas.daily.enforce=true")
        .run(context -> {
          RateLimitPolicies policies = context.getBean(RateLimitPolicies.class);
          assertThat(policies.policy("trial").enforce()).isFalse();
          assertThat(policies.policy("trial").levels().get(0).budget().quotas().get(0).enforce())
              .isFalse();
          assertThat(policies.policy(null).enforce()).isTrue();
        });
  }

  @Test
  void runWhenPricesAreSetShouldTranslateThemToMicroUnits() {
    runner.withPropertyValues(
            "ratelimiter.prices.gpt-4o.input=2.50",
            "ratelimiter.prices.gpt-4o.output=10",
            "ratelimiter.prices.gpt-4o.cached-input=1.25",
            "ratelimiter.prices.gpt-4o-mini.input=0.15",
            "ratelimiter.prices.gpt-4o-mini.output=0.6")
        .run(context -> {
          ModelPrices prices = context.getBean(RateLimitPolicies.class).prices();
          assertThat(prices.price("gpt-4o")).isEqualTo(
              new ModelPrices.Price(2_500_000, 10_000_000, 1_250_000));
          assertThat(prices.price("gpt-4o-mini")).isEqualTo(
              new ModelPrices.Price(150_000, 600_000, 150_000));
          assertThat(prices.price("other")).isNull();
        });
  }

  @Test
  void runWhenModelWithCostQuotaHasNoPriceShouldFailNamingItsPriceProperty() {
    failsNaming("ratelimiter.prices.gpt-4o",
        "ratelimiter.policies.chat.models.gpt-4o.quotas.spend.unit=cost",
        "ratelimiter.policies.chat.models.gpt-4o.quotas.spend.limit=10",
        "ratelimiter.policies.chat.models.gpt-4o.quotas.spend.period=month",
        "ratelimiter.prices.gpt-4o-mini.input=1",
        "ratelimiter.prices.gpt-4o-mini.output=1");
  }

  @Test
  void runWhenPolicyWithCostQuotaServesAnyModelWithoutADefaultPriceShouldFailNamingIt() {
    failsNaming("ratelimiter.prices.default",
        "ratelimiter.policies.chat.quotas.spend.unit=cost",
        "ratelimiter.policies.chat.quotas.spend.limit=10",
        "ratelimiter.policies.chat.quotas.spend.period=month",
        "ratelimiter.prices.gpt-4o.input=1",
        "ratelimiter.prices.gpt-4o.output=1");
  }

  @Test
  void runWhenModelWithCostQuotaHasOnlyTheDefaultPriceShouldStart() {
    runner.withPropertyValues(
            "ratelimiter.policies.chat.models.gpt-4o.quotas.spend.unit=cost",
            "ratelimiter.policies.chat.models.gpt-4o.quotas.spend.limit=10",
            "ratelimiter.policies.chat.models.gpt-4o.quotas.spend.period=month",
            "ratelimiter.prices.default.input=1",
            "ratelimiter.prices.default.output=1")
        .run(context -> assertThat(context).hasNotFailed());
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "limit=0|ratelimiter.policies.chat.quotas.q.limit",
      "limit=1.5|ratelimiter.policies.chat.quotas.q.limit",
      "limit=9007199254740993|ratelimiter.policies.chat.quotas.q.limit",
      "period=fortnight|ratelimiter.policies.chat.quotas.q.period",
      "unit=euros|ratelimiter.policies.chat.quotas.q.unit",
      "thresholds=50,120|ratelimiter.policies.chat.quotas.q.thresholds",
      "thresholds=80,50|ratelimiter.policies.chat.quotas.q.thresholds"})
  void runWhenQuotaValueIsInvalidShouldFailNamingTheProperty(String setting, String property) {
    failsNaming(property,
        "ratelimiter.policies.chat.quotas.q.unit=requests",
        "ratelimiter.policies.chat.quotas.q.limit=10",
        "ratelimiter.policies.chat.quotas.q.period=day",
        "ratelimiter.policies.chat.quotas.q." + setting);
  }

  @Test
  void runWhenCostLimitHasSevenDecimalsShouldFailNamingTheLimit() {
    failsNaming("ratelimiter.policies.chat.quotas.q.limit",
        "ratelimiter.policies.chat.quotas.q.unit=cost",
        "ratelimiter.policies.chat.quotas.q.limit=0.0000001",
        "ratelimiter.policies.chat.quotas.q.period=day",
        "ratelimiter.prices.default.input=1",
        "ratelimiter.prices.default.output=1");
  }

  @Test
  void runWhenCostLimitIsBeyondTwoToThe53MicroUnitsShouldFailNamingTheLimit() {
    // 10^12 is 10^18 micro-units: a long, but past what a quota counts exactly
    failsNaming("ratelimiter.policies.chat.quotas.q.limit",
        "ratelimiter.policies.chat.quotas.q.unit=cost",
        "ratelimiter.policies.chat.quotas.q.limit=1000000000000",
        "ratelimiter.policies.chat.quotas.q.period=day",
        "ratelimiter.prices.default.input=1",
        "ratelimiter.prices.default.output=1");
  }

  @Test
  void runWhenQuotaLacksAUnitShouldFailNamingIt() {
    failsNaming("ratelimiter.policies.chat.quotas.q.unit",
        "ratelimiter.policies.chat.quotas.q.limit=10",
        "ratelimiter.policies.chat.quotas.q.period=day");
  }

  @Test
  void runWhenQuotaNameHoldsAnotherCharacterShouldFailNamingTheQuotas() {
    failsNaming("ratelimiter.policies.chat.quotas",
        "ratelimiter.policies.chat.quotas[per day].unit=requests",
        "ratelimiter.policies.chat.quotas[per day].limit=10",
        "ratelimiter.policies.chat.quotas[per day].period=day");
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "input=0.0000001|ratelimiter.prices.gpt-4o.input",
      "output=-1|ratelimiter.prices.gpt-4o.output",
      "cached-input=0.12345678|ratelimiter.prices.gpt-4o.cached-input"})
  void runWhenPriceIsInvalidShouldFailNamingTheProperty(String setting, String property) {
    failsNaming(property,
        "ratelimiter.prices.gpt-4o.input=1",
        "ratelimiter.prices.gpt-4o.output=2",
        "ratelimiter.prices.gpt-4o." + setting);
  }

  @Test
  void runWhenPriceLacksTheOutputShouldFailNamingIt() {
    failsNaming("ratelimiter.prices.gpt-4o.output", "ratelimiter.prices.gpt-4o.input=1");
  }

  private void failsNaming(String property, String... properties) {
    runner.withPropertyValues(properties).run(context -> {
      assertThat(context).hasFailed();
      assertThat(RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure()))
          .contains("'" + property + "'");
    });
  }
}
