package io.github.llmratelimiter.springai.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.springai.RateLimitAdvisor;
import io.github.llmratelimiter.springai.it.ChatApp.Settled;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.context.ConfigurableApplicationContext;
import reactor.core.Disposable;

/**
 * Spring AI's {@code ChatClient} with its real OpenAI chat model, limited by the advisor the
 * auto-configuration registers, against the local stub: calls and streams charged with the
 * estimate of their prompt and settled with the usage the stub reports, denies before the stub is
 * reached, a cancelled stream and failed calls, quotas and the metrics.
 */
class SpringAiAdvisorTests {

  private static OpenAiStub stub;
  private static ConfigurableApplicationContext app;
  private static ChatClient chat;
  private static List<Settled> settled;

  @BeforeAll
  static void start() {
    stub = OpenAiStub.start();
    app = ChatApp.start(stub,
        "ratelimiter.rpm.limit=1000",
        "ratelimiter.tpm.limit=1000000",
        "ratelimiter.policies.chat.rpm.limit=1",
        "ratelimiter.policies.one-at-a-time.concurrency.limit=1",
        "ratelimiter.policies.two-a-day.quotas.daily-requests.unit=requests",
        "ratelimiter.policies.two-a-day.quotas.daily-requests.limit=2",
        "ratelimiter.policies.two-a-day.quotas.daily-requests.period=day");
    chat = app.getBean(ChatClient.class);
    @SuppressWarnings("unchecked")
    List<Settled> recorded = app.getBean("settlements", List.class);
    settled = recorded;
  }

  @AfterAll
  static void stop() {
    app.close();
    stub.close();
  }

  @BeforeEach
  void answer() {
    stub.mode(OpenAiStub.Mode.ANSWER);
    stub.usage(11, 7);
  }

  /** The estimate a web front door makes of the same OpenAI request with a user message "hello". */
  private static long estimateOfHello() {
    return ModelTokenEstimator.defaults().estimate(
        Map.of("messages", List.of(Map.of("role", "user", "content", "hello"))));
  }

  @Test
  void aCallIsChargedItsPromptsEstimateAndReconciledToTheUsageTheModelReports() {
    int before = stub.calls();
    settled.clear();
    String answer = chat.prompt("hello").advisors(RateLimitAdvisor.caller("call-tenant")).call().content();
    assertThat(answer).isEqualTo("hi");
    assertThat(stub.calls()).isEqualTo(before + 1);
    assertThat(settled).containsExactly(new Settled("default", estimateOfHello(), 18));
  }

  @Test
  void aStreamIsReconciledToTheLastUsageItReportedWhenItCompletes() {
    stub.usage(20, 5);
    settled.clear();
    List<String> parts = chat.prompt("hello").advisors(RateLimitAdvisor.caller("stream-tenant"))
        .stream().content().collectList().block(Duration.ofSeconds(30));
    assertThat(String.join("", parts)).isEqualTo("hi");
    await(() -> settled.contains(new Settled("default", estimateOfHello(), 25)));
    assertThat(settled).hasSize(1);
  }

  @Test
  void aDeniedCallOrStreamNeverReachesTheModel() {
    ChatClient.ChatClientRequestSpec call = chat.prompt("hello")
        .advisors(RateLimitAdvisor.caller("denied-tenant"))
        .advisors(RateLimitAdvisor.policy("chat"));
    assertThat(call.call().content()).isEqualTo("hi");
    int before = stub.calls();

    assertThatThrownBy(() -> chat.prompt("hello").advisors(RateLimitAdvisor.caller("denied-tenant"))
        .advisors(RateLimitAdvisor.policy("chat")).call().content())
        .isInstanceOfSatisfying(RateLimitExceededException.class, e -> {
          assertThat(e.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
          assertThat(e.decision().retryAfterMs()).isPositive();
          assertThat(e.outcome().policy().name()).isEqualTo("chat");
          assertThat(e.outcome().decidingBudget().name()).isEqualTo(e.decision().level());
          assertThat(e.outcome().key().model()).isEqualTo("gpt-4o-mini");
        });
    assertThatThrownBy(() -> chat.prompt("hello").advisors(RateLimitAdvisor.caller("denied-tenant"))
        .advisors(RateLimitAdvisor.policy("chat")).stream().content().blockLast(Duration.ofSeconds(30)))
        .isInstanceOf(RateLimitExceededException.class);
    assertThat(stub.calls()).isEqualTo(before);
  }

  @Test
  void aCancelledStreamKeepsItsEstimateAndGivesItsSlotBackOnce() throws Exception {
    stub.mode(OpenAiStub.Mode.HOLD_STREAM);
    settled.clear();
    CountDownLatch first = new CountDownLatch(1);
    Disposable stream = chat.prompt("hello").advisors(RateLimitAdvisor.caller("cancel-tenant"))
        .advisors(RateLimitAdvisor.policy("one-at-a-time"))
        .stream().content().subscribe(part -> first.countDown());
    assertThat(first.await(30, TimeUnit.SECONDS)).isTrue();
    // the stream holds the tenant's one slot
    assertThatThrownBy(() -> chat.prompt("hello").advisors(RateLimitAdvisor.caller("cancel-tenant"))
        .advisors(RateLimitAdvisor.policy("one-at-a-time")).call().content())
        .isInstanceOfSatisfying(RateLimitExceededException.class,
            e -> assertThat(e.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT));

    stream.dispose();
    await(() -> !settled.isEmpty());
    assertThat(settled).containsExactly(
        new Settled("one-at-a-time", estimateOfHello(), estimateOfHello()));
    stub.releaseHeld();
    stub.mode(OpenAiStub.Mode.ANSWER);
    assertThat(chat.prompt("hello").advisors(RateLimitAdvisor.caller("cancel-tenant"))
        .advisors(RateLimitAdvisor.policy("one-at-a-time")).call().content()).isEqualTo("hi");
  }

  @Test
  void aFailedCallOrStreamIsRefundedAndGivesItsSlotBack() {
    stub.mode(OpenAiStub.Mode.FAIL);
    settled.clear();
    int before = stub.calls();
    assertThatThrownBy(() -> chat.prompt("hello").advisors(RateLimitAdvisor.caller("failing-tenant"))
        .advisors(RateLimitAdvisor.policy("one-at-a-time")).call().content())
        .isNotInstanceOf(RateLimitExceededException.class);
    assertThatThrownBy(() -> chat.prompt("hello").advisors(RateLimitAdvisor.caller("failing-tenant"))
        .advisors(RateLimitAdvisor.policy("one-at-a-time")).stream().content()
        .blockLast(Duration.ofSeconds(30)))
        .isNotInstanceOf(RateLimitExceededException.class);
    assertThat(stub.calls()).isEqualTo(before + 2);
    await(() -> settled.size() == 2);
    assertThat(settled).containsOnly(new Settled("one-at-a-time", estimateOfHello(), 0));
  }

  @Test
  void aQuotaOfThePolicyDeniesBeforeTheModel() {
    for (int i = 0; i < 2; i++) {
      assertThat(chat.prompt("hello").advisors(RateLimitAdvisor.caller("quota-tenant"))
          .advisors(RateLimitAdvisor.policy("two-a-day")).call().content()).isEqualTo("hi");
    }
    int before = stub.calls();
    assertThatThrownBy(() -> chat.prompt("hello").advisors(RateLimitAdvisor.caller("quota-tenant"))
        .advisors(RateLimitAdvisor.policy("two-a-day")).call().content())
        .isInstanceOfSatisfying(RateLimitExceededException.class, e -> {
          assertThat(e.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
          assertThat(e.outcome().exceededQuota()).isNotNull();
        });
    assertThat(stub.calls()).isEqualTo(before);
  }

  @Test
  void theAdvisorsDecisionsAreInTheLimitersMetrics() {
    MeterRegistry meters = app.getBean(MeterRegistry.class);
    double before = denied(meters, "chat");
    chat.prompt("hello").advisors(RateLimitAdvisor.caller("metrics-tenant"))
        .advisors(RateLimitAdvisor.policy("chat")).call().content();
    assertThatThrownBy(() -> chat.prompt("hello").advisors(RateLimitAdvisor.caller("metrics-tenant"))
        .advisors(RateLimitAdvisor.policy("chat")).call().content())
        .isInstanceOf(RateLimitExceededException.class);
    assertThat(denied(meters, "chat")).isEqualTo(before + 1);
  }

  @Test
  void theDocumentedCallAnswersThenSaysHowLongToWait() {
    assertThat(ask(chat, "docs-tenant", "hello")).isEqualTo("hi");
    assertThat(ask(chat, "docs-tenant", "hello")).matches("busy, retry in [1-6]?[0-9] s");
  }

  // tag::spring-ai-call[]
  String ask(ChatClient chatClient, String tenant, String question) {
    try {
      return chatClient.prompt(question)
          .advisors(RateLimitAdvisor.caller(tenant))  // the tenant, when no principal is authenticated
          .advisors(RateLimitAdvisor.policy("chat"))  // optional: else ratelimiter.spring-ai.policy
          .call()
          .content();
    } catch (RateLimitExceededException e) {  // nothing was sent to the model
      Decision decision = e.decision();  // its reason, retry-after and the level that denied
      return "busy, retry in " + Duration.ofMillis(decision.retryAfterMs()).toSeconds() + " s";
    }
  }
  // end::spring-ai-call[]

  @Test
  void aCallWithoutACallerIsRejectedBeforeTheModel() {
    int before = stub.calls();
    assertThatThrownBy(() -> chat.prompt("hello").call().content())
        .isInstanceOf(io.github.llmratelimiter.gateway.InvalidRateLimitRequestException.class);
    assertThat(stub.calls()).isEqualTo(before);
  }

  private static double denied(MeterRegistry meters, String policy) {
    return meters.find("ratelimiter.decisions").tag("policy", policy).tag("result", "denied")
        .counters().stream().mapToDouble(c -> c.count()).sum();
  }

  /** Waits, up to 10 s, for what the store settles after the stream's end, off the caller's thread. */
  private static void await(java.util.function.BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("the condition held within 10 s").isLessThan(deadline);
      Thread.onSpinWait();
    }
  }
}
