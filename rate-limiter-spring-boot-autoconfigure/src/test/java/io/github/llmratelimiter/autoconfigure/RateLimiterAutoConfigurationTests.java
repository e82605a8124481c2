package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.ForwardingStore;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPlanResolver;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class RateLimiterAutoConfigurationTests {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class));

  @Test
  void runWhenNothingConfiguredShouldProvideInMemoryStoreAndDefaultPolicy() {
    runner.run(context -> {
      assertThat(context).hasSingleBean(RateLimitStore.class).hasSingleBean(RateLimitEnforcer.class);
      RateLimitPolicies policies = context.getBean(RateLimitPolicies.class);
      assertThat(policies.all()).containsOnlyKeys("default");
      Budget budget = policies.policy(null).levels().get(0).budget();
      assertThat(budget.window().limit()).isEqualTo(60);
      assertThat(budget.window().window()).isEqualTo(Duration.ofMinutes(1));
      assertThat(budget.bucket()).isNull();
      assertThat(policies.composition()).isEqualTo(Composition.RESERVE_COMMIT);
    });
  }

  @Test
  void runWhenDisabledShouldDefineNoBeans() {
    runner.withPropertyValues("ratelimiter.enabled=false").run(context -> assertThat(context)
        .doesNotHaveBean(RateLimitStore.class)
        .doesNotHaveBean(RateLimitEnforcer.class)
        .doesNotHaveBean(RateLimitPolicies.class));
  }

  @Test
  void runWhenUserDefinesStoreShouldUseIt() {
    runner.withUserConfiguration(RecordingStoreConfig.class).run(context -> {
      assertThat(context).hasSingleBean(RateLimitStore.class);
      assertThat(context.getBean(RateLimitStore.class)).isInstanceOf(RecordingStore.class);
      assertThat(context.getBean(RateLimitEnforcer.class).store()).isInstanceOf(RecordingStore.class);
    });
  }

  @Test
  void runWhenTickerBeanShouldDriveTheInMemoryStore() {
    runner.withUserConfiguration(TickerConfig.class)
        .withPropertyValues("ratelimiter.rpm.limit=2", "ratelimiter.rpm.window=10s")
        .run(context -> {
          RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
          RateLimitKey key = RateLimitKey.of("sk-tenant-0001", null);
          assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isTrue();
          assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isTrue();
          Decision denied = enforcer.acquire(null, key, 1).decision();
          assertThat(denied.reason()).isEqualTo(Reason.RPM_LIMIT);
          assertThat(denied.retryAfterMs()).isEqualTo(10_000);
          context.getBean(ManualTicker.class).advance(Duration.ofSeconds(10));
          assertThat(enforcer.acquire(null, key, 1).decision().allowed()).isTrue();
        });
  }

  @Test
  void runWhenPolicyOmitsValuesShouldInheritTopLevelOnes() {
    runner.withPropertyValues("ratelimiter.rpm.limit=50", "ratelimiter.rpm.window=30s",
            "ratelimiter.burst.capacity=5", "ratelimiter.burst.refill-per-second=0.5",
            "ratelimiter.policies.premium.rpm.limit=500",
            "ratelimiter.policies.premium.models.gpt-4o.burst.capacity=2",
            "ratelimiter.composition=reserve-commit")
        .run(context -> {
          RateLimitPolicies policies = context.getBean(RateLimitPolicies.class);
          assertThat(policies.composition()).isEqualTo(Composition.RESERVE_COMMIT);
          RateLimitPolicy.Level premium = policies.policy("premium").levels().get(0);
          assertThat(premium.budget().window().limit()).isEqualTo(500);
          assertThat(premium.budget().window().window()).isEqualTo(Duration.ofSeconds(30));
          assertThat(premium.budget().bucket().capacity()).isEqualTo(5);
          Budget gpt4o = premium.budgetFor("gpt-4o");
          assertThat(gpt4o.name()).isEqualTo("premium/gpt-4o");
          assertThat(gpt4o.window().limit()).isEqualTo(500);
          assertThat(gpt4o.bucket().capacity()).isEqualTo(2);
          assertThat(gpt4o.bucket().refillPerSecond()).isEqualTo(0.5);
          assertThat(premium.budgetFor("gpt-4o-mini")).isEqualTo(premium.budget());
        });
  }

  @Test
  void runWhenHierarchyConfiguredShouldDecideEveryLevelInOneStoreCall() {
    runner.withUserConfiguration(RecordingStoreConfig.class)
        .withPropertyValues("ratelimiter.policies.per-key.rpm.limit=100",
            "ratelimiter.policies.chat.parent=per-key",
            "ratelimiter.policies.chat.scope=api-key-and-model",
            "ratelimiter.policies.chat.rpm.limit=10")
        .run(context -> {
          RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
          RateLimitOutcome outcome = enforcer.acquire("chat", RateLimitKey.of("sk-tenant-0001", "gpt-4o"), 2.5);
          RecordingStore store = context.getBean(RecordingStore.class);
          assertThat(store.calls).hasSize(1);
          Call call = store.calls.get(0);
          assertThat(call.levels).extracting(Budget::name).containsExactly("per-key", "chat");
          assertThat(call.keys).containsExactly("sk-tenant-0001", "14:sk-tenant-0001:gpt-4o");
          assertThat(call.cost).isEqualTo(2.5);
          assertThat(outcome.decision().allowed()).isTrue();
        });
  }

  @Test
  void runWhenTpmConfiguredShouldMapItOntoModelTokenLimitsWithPolicyAndModelOverrides() {
    runner.withPropertyValues("ratelimiter.tpm.limit=10000",
            "ratelimiter.policies.chat.tpm.limit=2000", "ratelimiter.policies.chat.tpm.window=30s",
            "ratelimiter.policies.chat.models.gpt-4o.tpm.limit=500",
            "ratelimiter.policies.plain.rpm.limit=5")
        .run(context -> {
          RateLimitPolicies policies = context.getBean(RateLimitPolicies.class);
          Budget top = policies.policy("default").levels().get(0).budget();
          assertThat(top.modelTokens()).isEqualTo(new ModelTokenLimit(10_000, Duration.ofMinutes(1)));
          RateLimitPolicy.Level chat = policies.policy("chat").levels().get(0);
          assertThat(chat.budget().modelTokens()).isEqualTo(new ModelTokenLimit(2000, Duration.ofSeconds(30)));
          // the model override sets the limit and inherits the policy's window
          assertThat(chat.budgetFor("gpt-4o").modelTokens())
              .isEqualTo(new ModelTokenLimit(500, Duration.ofSeconds(30)));
          assertThat(policies.policy("plain").levels().get(0).budget().modelTokens())
              .isEqualTo(new ModelTokenLimit(10_000, Duration.ofMinutes(1)));
        });
  }

  @Test
  void runWhenNoTpmLimitShouldLeaveBudgetsWithoutModelTokensAndDecideWithoutReserving() {
    runner.run(context -> {
      RateLimitPolicies policies = context.getBean(RateLimitPolicies.class);
      assertThat(policies.allBudgets()).allSatisfy(b -> assertThat(b.modelTokens()).isNull());
      RateLimitOutcome outcome = context.getBean(RateLimitEnforcer.class)
          .acquire(null, RateLimitKey.of("sk-no-tpm-00001", null), 1, () -> {
            throw new AssertionError("no TPM level: the estimate is never asked for");
          });
      assertThat(outcome.decision().allowed()).isTrue();
      // the store reports its figures per component and holds nothing for the call
      assertThat(outcome.reservation().id()).isZero();
      assertThat(outcome.reservation().components()).hasSize(1);
      assertThat(outcome.modelTokens()).isNull();
    });
  }

  @Test
  void runWhenUserDefinesEstimatorShouldUseIt() {
    runner.withBean(ModelTokenEstimator.class, () -> body -> 42).run(context -> {
      assertThat(context).hasSingleBean(ModelTokenEstimator.class);
      assertThat(context.getBean(ModelTokenEstimator.class).estimate(java.util.Map.of())).isEqualTo(42);
    });
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "ratelimiter.rpm.limit=0 | ratelimiter.rpm.limit | an integer from 1",
      "ratelimiter.policies.premium.rpm.limit=-5 | ratelimiter.policies.premium.rpm.limit | an integer from 1",
      "ratelimiter.rpm.window=0s | ratelimiter.rpm.window | a positive duration",
      "ratelimiter.policies.p.rpm.window=-1s | ratelimiter.policies.p.rpm.window | a positive duration",
      "ratelimiter.burst.capacity=10,ratelimiter.burst.refill-per-second=-1 | ratelimiter.burst.refill-per-second | a finite number >= 0",
      "ratelimiter.burst.capacity=0,ratelimiter.burst.refill-per-second=1 | ratelimiter.burst.capacity | a finite number > 0",
      "ratelimiter.burst.capacity=10 | ratelimiter.burst.refill-per-second | required with ratelimiter.burst.capacity",
      "ratelimiter.models.gpt-4o.burst.refill-per-second=-2,ratelimiter.burst.capacity=1,ratelimiter.burst.refill-per-second=1 | ratelimiter.models.gpt-4o.burst.refill-per-second | a finite number >= 0",
      "ratelimiter.composition=fastest | ratelimiter.composition | one of sequential, reserve-commit",
      "ratelimiter.rpm.window=soon | ratelimiter.rpm.window | a positive duration",
      "ratelimiter.default-policy=gold | ratelimiter.default-policy | one of the policies [default]",
      "ratelimiter.policies.chat.parent=org | ratelimiter.policies.chat.parent | one of the policies [default, chat]",
      "ratelimiter.policies.a.parent=b,ratelimiter.policies.b.parent=a | ratelimiter.policies.a.parent | is a cycle",
      "ratelimiter.web.routes[0].include=/v1/**,ratelimiter.web.routes[0].policy=gold | ratelimiter.web.routes[0].policy | one of the policies [default]",
      "ratelimiter.scope=per-tenant | ratelimiter.scope | one of api-key, api-key-and-model, global",
      "ratelimiter.tpm.limit=0 | ratelimiter.tpm.limit | an integer >= 1 (model tokens per window)",
      "ratelimiter.tpm.limit=10,ratelimiter.policies.chat.models.gpt-4o.tpm.window=0s | ratelimiter.policies.chat.models.gpt-4o.tpm.window | a positive duration",
      "ratelimiter.policies.chat.tpm.limit=-3 | ratelimiter.policies.chat.tpm.limit | an integer >= 1",
      "ratelimiter.tpm.bytes-per-token=0 | ratelimiter.tpm.bytes-per-token | an integer >= 1",
      "ratelimiter.tpm.default-completion-tokens=-1 | ratelimiter.tpm.default-completion-tokens | an integer >= 0",
      "ratelimiter.default-plan=gold | ratelimiter.default-plan | one of the plans []",
      "ratelimiter.plans.pro.policies.chat.rpm.limit=60 | ratelimiter.plans.pro.policies.chat | one of the policies [default]",
      "ratelimiter.policies.chat.rpm.limit=5,ratelimiter.plans.pro.policies.chat.models.gpt-4o.rpm.limit=60 | ratelimiter.plans.pro.policies.chat.models.gpt-4o | one of the models policy 'chat' configures []",
      "ratelimiter.plans.pro.policies.default.rpm.limit=0 | ratelimiter.plans.pro.policies.default.rpm.limit | an integer from 1",
      "ratelimiter.plans.pro.policies.default.burst.capacity=5,ratelimiter.plans.pro.policies.default.burst.refill-per-second=1 | ratelimiter.plans.pro.policies.default.burst.capacity | adds no bucket",
      "ratelimiter.plans.pro.policies.default.rpm.window=30s | ratelimiter.plans.pro.policies.default.rpm.window | keeps its windows",
      "ratelimiter.policies.chat.concurrency.limit=0 | ratelimiter.policies.chat.concurrency.limit | an integer from 1",
      "ratelimiter.policies.chat.concurrency.limit=2,ratelimiter.policies.chat.concurrency.lease-timeout=2d | ratelimiter.policies.chat.concurrency.lease-timeout | at most PT24H",
      "ratelimiter.plan-refresh=0s | ratelimiter.plan-refresh | a positive duration",
      "ratelimiter.store-failure=sometimes | ratelimiter.store-failure | one of deny, allow, local-fallback",
  })
  void runWhenPropertyInvalidShouldFailWithAnalysisNamingPropertyAndRange(
      String properties, String property, String range) {
    runner.withPropertyValues(properties.split(",")).run(context -> {
      assertThat(context).hasFailed();
      FailureAnalysis analysis = new RateLimiterFailureAnalyzer().analyze(context.getStartupFailure());
      assertThat(analysis).isNotNull();
      assertThat(analysis.getDescription()).contains("'" + property + "'").contains(range);
      assertThat(analysis.getAction()).contains(property);
    });
  }

  @Test
  void runWhenPlansConfiguredShouldDecideEachKeyUnderItsAssignedPlan() {
    runner.withPropertyValues("ratelimiter.policies.chat.rpm.limit=1",
        "ratelimiter.policies.chat.concurrency.limit=3", "ratelimiter.default-plan=free",
        "ratelimiter.plans.free.policies.chat.rpm.limit=1",
        "ratelimiter.plans.pro.policies.chat.rpm.limit=5",
        "ratelimiter.plans.pro.policies.chat.concurrency.limit=9").run(context -> {
          RateLimitPlanResolver plans = context.getBean(RateLimitPlanResolver.class);
          RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
          RateLimitKey key = RateLimitKey.of("sk-plan-ctx-0123456789", null);
          assertThat(enforcer.policies().plans()).containsExactly("free", "pro");
          assertThat(enforcer.acquire("chat", key, 1).plan()).isEqualTo("free");
          assertThat(enforcer.acquire("chat", key, 1).decision().denied()).isTrue();
          plans.assign(key.apiKey(), "pro");
          RateLimitOutcome pro = enforcer.acquire("chat", key, 1);
          assertThat(pro.plan()).isEqualTo("pro");
          assertThat(pro.decision().allowed()).isTrue();
          assertThat(pro.levels().get(0).concurrency().limit()).isEqualTo(9);
          pro.slots().release();
        });
  }

  @Test
  void runWhenUserDefinesPlanResolverShouldUseIt() {
    runner.withPropertyValues("ratelimiter.plans.pro.policies.default.rpm.limit=100")
        .withBean(RateLimitPlanResolver.class, () -> apiKey -> apiKey.startsWith("sk-pro") ? "pro" : "default")
        .run(context -> {
          RateLimitEnforcer enforcer = context.getBean(RateLimitEnforcer.class);
          assertThat(enforcer.acquire(null, RateLimitKey.of("sk-pro-0123456789", null), 1).plan())
              .isEqualTo("pro");
          assertThat(enforcer.acquire(null, RateLimitKey.of("sk-free-0123456789", null), 1).plan())
              .isEqualTo("default");
        });
  }

  @Test
  void runWhenTheStoreKeepsNoPlansShouldGiveEveryKeyTheDefaultPlanAndTakeNoAssignment() {
    RateLimitStore memory = RateLimitStore.inMemory();
    RateLimitStore decisionsOnly = new ForwardingStore(memory) {
      @Override
      public Optional<PlanAssignments> planAssignments() {
        return Optional.empty();
      }
    };
    runner.withPropertyValues("ratelimiter.plans.pro.policies.default.rpm.limit=100")
        .withBean(RateLimitStore.class, () -> decisionsOnly)
        .run(context -> {
          RateLimitPlanResolver resolver = context.getBean(RateLimitPlanResolver.class);
          assertThat(resolver.plan("sk-any-0123456789")).isEqualTo("default");
          assertThatThrownBy(() -> resolver.assign("sk-any-0123456789", "pro"))
              .isInstanceOf(UnsupportedOperationException.class);
          assertThat(context.getBean(RateLimitEnforcer.class)
              .acquire(null, RateLimitKey.of("sk-any-0123456789", null), 1).plan())
              .isEqualTo("default");
        });
    memory.close();
  }

  @Configuration(proxyBeanMethods = false)
  static class TickerConfig {
    @Bean
    ManualTicker ticker() {
      return new ManualTicker();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class RecordingStoreConfig {
    @Bean
    RecordingStore recordingStore() {
      return new RecordingStore(RateLimitStore.inMemory());
    }
  }

  record Call(List<Budget> levels, List<String> keys, double cost) {}

  /** A store that records the calls it receives and delegates to the in-memory store. */
  static final class RecordingStore extends ForwardingStore {
    final List<Call> calls = new ArrayList<>();

    RecordingStore(RateLimitStore delegate) {
      super(delegate);
    }

    @Override
    public synchronized Decision acquire(List<Budget> levels, List<String> keys, double cost, Composition c) {
      calls.add(new Call(levels, keys, cost));
      return delegate.acquire(levels, keys, cost, c);
    }

    @Override
    public synchronized Reservation reserve(List<Budget> levels, List<String> keys, double cost,
        long estimate, Composition c) {
      calls.add(new Call(levels, keys, cost));
      return delegate.reserve(levels, keys, cost, estimate, c);
    }
  }
}
