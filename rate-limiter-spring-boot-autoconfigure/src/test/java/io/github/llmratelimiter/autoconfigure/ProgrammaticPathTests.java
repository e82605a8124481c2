package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.ModelTokenReservation;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitProblem;
import io.github.llmratelimiter.gateway.RateLimitRejection;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The programmatic path of docs/web-stacks.md, compiled and run (its code blocks are these tagged
 * regions, which {@link ReadmeExamplesTests} compares): charging by policy name with key, model,
 * cost and estimate; reconciling from another thread; rendering a 429 from an outcome; charging
 * model tokens used outside a request.
 */
class ProgrammaticPathTests {

  private static final String API_KEY = "sk-programmatic-0123456789";

  /** What a provider answered: the text and the model tokens it reports it used. */
  record Reply(String text, long totalTokens) {}

  /** The application's LLM client (here a stand-in that echoes, and uses 42 model tokens). */
  interface ChatProvider {
    Reply complete(String model, String prompt);
  }

  // tag::charge[]
  static class Completions {

    private final RateLimitEnforcer limiter; // a bean of the starter
    private final ChatProvider provider;
    private final ExecutorService executor;

    Completions(RateLimitEnforcer limiter, ChatProvider provider, ExecutorService executor) {
      this.limiter = limiter;
      this.provider = provider;
      this.executor = executor;
    }

    CompletableFuture<String> complete(String apiKey, String model, String prompt, int maxTokens) {
      RateLimitOutcome outcome = limiter.acquire("chat", // the policy, by name
          RateLimitKey.of(apiKey, model),                 // who pays, and which model's budgets
          1.0,                                            // the cost, in bucket permits
          () -> prompt.length() / 4 + maxTokens);          // the estimated model tokens (TPM)
      if (outcome.decision().denied()) {
        throw new RateLimitExceededException(outcome);   // Spring MVC and WebFlux answer a 429
      }
      ModelTokenReservation tokens = outcome.modelTokens(); // null when no level limits them
      return CompletableFuture.supplyAsync(() -> provider.complete(model, prompt), executor)
          .whenComplete((reply, failure) -> {             // on the executor's thread
            if (tokens != null) {                         // the usage replaces the estimate;
              tokens.settle(reply == null ? null : reply.totalTokens(), failure != null);
            }                                             // a failed call is refunded
          })
          .thenApply(Reply::text);
    }
  }
  // end::charge[]

  /** A 429 rendered as data, as a front door outside Spring's handlers writes it. */
  record Rendered(int status, Map<String, String> headers, RateLimitProblem body) {}

  static Rendered render(RateLimitGateway gateway, RateLimitExceededException denied) {
    // tag::render[]
    RateLimitRejection rejection = gateway.reject(denied, "/v1/chat/completions");
    int status = rejection.status();                     // 429 (503 if the store failed closed)
    Map<String, String> headers = new LinkedHashMap<>(); // Retry-After, retry-after-ms, RateLimit…
    rejection.headers().forEach(h -> headers.put(h.name(), h.value()));
    RateLimitProblem body = rejection.problem();         // the RFC 9457 body, as data
    // end::render[]
    return new Rendered(status, headers, body);
  }

  static void chargeUsage(RateLimitGateway gateway, String apiKey, Reply usage) {
    // tag::after-the-fact[]
    // a batch job, or an agent's tool calls, used model tokens outside any request: they fill the
    // key's model-token windows on the policy, without a request slot, and never deny
    gateway.chargeModelTokens("chat", RateLimitKey.of(apiKey, "gpt-4o"), usage.totalTokens());
    // end::after-the-fact[]
  }

  @Configuration(proxyBeanMethods = false)
  static class App {

    @Bean
    ManualTicker ticker() {
      return new ManualTicker();
    }

    @Bean(destroyMethod = "shutdownNow")
    ExecutorService llmExecutor() {
      return Executors.newFixedThreadPool(2);
    }

    @Bean
    Completions completions(RateLimitEnforcer limiter, ExecutorService llmExecutor) {
      return new Completions(limiter, (model, prompt) -> new Reply("echo: " + prompt, 42), llmExecutor);
    }
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(RateLimiterAutoConfiguration.class))
      .withUserConfiguration(App.class)
      .withPropertyValues("ratelimiter.policies.chat.scope=api-key-and-model",
          "ratelimiter.policies.chat.rpm.limit=3", "ratelimiter.policies.chat.tpm.limit=1000");

  private static long modelTokensUsed(RateLimitPolicies policies, RateLimitStore store, String model) {
    RateLimitPolicy chat = policies.policy("chat");
    RateLimitKey key = RateLimitKey.of(API_KEY, model);
    Budget budget = chat.budgets(key).get(0);
    return admin(store).inspect(budget, chat.keys(key).get(0)).map(KeySnapshot::modelTokensUsed).orElse(0L);
  }

  @Test
  void aCallChargedByPolicyNameIsReconciledFromTheExecutorsThread() {
    runner.run(context -> {
      Completions completions = context.getBean(Completions.class);
      assertThat(completions.complete(API_KEY, "gpt-4o", "Hello there!", 500).join())
          .isEqualTo("echo: Hello there!");
      // the estimate (12 / 4 + 500 = 503) was replaced by the 42 the provider reported
      assertThat(modelTokensUsed(context.getBean(RateLimitPolicies.class),
          context.getBean(RateLimitStore.class), "gpt-4o")).isEqualTo(42);
      assertThat(modelTokensUsed(context.getBean(RateLimitPolicies.class),
          context.getBean(RateLimitStore.class), "gpt-4o-mini")).as("another model's budget").isZero();
    });
  }

  @Test
  void aDenyIsRenderedAsA429FromItsOutcome() {
    runner.run(context -> {
      Completions completions = context.getBean(Completions.class);
      for (int i = 0; i < 3; i++) {
        completions.complete(API_KEY, "gpt-4o", "hi", 10).join();
      }
      RateLimitExceededException denied = org.assertj.core.api.Assertions.catchThrowableOfType(
          RateLimitExceededException.class, () -> completions.complete(API_KEY, "gpt-4o", "hi", 10));
      assertThat(denied.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
      Rendered rendered = render(context.getBean(RateLimitGateway.class), denied);
      assertThat(rendered.status()).isEqualTo(429);
      assertThat(rendered.headers()).containsEntry("Retry-After", "60")
          .containsEntry("retry-after-ms", "60000")
          .containsEntry("RateLimit-Policy", "\"chat\";q=3;w=60, \"chat-tokens\";q=1000;qu=\"tokens\";w=60");
      assertThat(rendered.body().detail()).contains("RPM_LIMIT", "'chat'");
      assertThat(rendered.body().members()).containsEntry("retryAfterMs", 60_000L);
      context.getBean(ManualTicker.class).advance(Duration.ofMinutes(1));
      assertThat(completions.complete(API_KEY, "gpt-4o", "hi", 10).join()).isEqualTo("echo: hi");
    });
  }

  @Test
  void modelTokensUsedOutsideARequestAreChargedWithoutARequestSlot() {
    runner.run(context -> {
      RateLimitGateway gateway = context.getBean(RateLimitGateway.class);
      chargeUsage(gateway, API_KEY, new Reply("batch", 900));
      RateLimitPolicies policies = context.getBean(RateLimitPolicies.class);
      RateLimitStore store = context.getBean(RateLimitStore.class);
      assertThat(modelTokensUsed(policies, store, "gpt-4o")).isEqualTo(900);
      Completions completions = context.getBean(Completions.class);
      assertThatThrownBy(() -> completions.complete(API_KEY, "gpt-4o", "hi", 200))
          .isInstanceOfSatisfying(RateLimitExceededException.class,
              e -> assertThat(e.decision().reason()).isEqualTo(Reason.TPM_LIMIT));
      // no request slot was taken by the charge: three calls that fit still pass
      for (int i = 0; i < 3; i++) {
        completions.complete(API_KEY, "gpt-4o", "hi", 10).join();
      }
    });
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
