package io.github.llmratelimiter.springai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitObserver;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.StoreFailure;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.gateway.UpstreamRoutes;
import io.github.llmratelimiter.gateway.RateLimitPlanResolver;
import org.springframework.ai.chat.metadata.RateLimit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.metadata.ChatResponseMetadata;
import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.metadata.EmptyUsage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.security.authentication.AnonymousAuthenticationToken;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.core.context.SecurityContextHolder;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;

class RateLimitAdvisorTests {

  private static final ModelTokenEstimator ESTIMATOR = ModelTokenEstimator.defaults();

  private final List<Long> reconciled = new CopyOnWriteArrayList<>();
  private final RateLimitGateway gateway = gateway();

  private RateLimitGateway gateway() {
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(100), null,
            ModelTokenLimit.perMinute(1_000_000)))
        .build();
    RateLimitObserver observer = new RateLimitObserver() {
      @Override
      public void onDecision(RateLimitOutcome outcome, long nanos) {}

      @Override
      public void onReconcile(String policy, long estimate, long actual) {
        reconciled.add(actual);
      }
    };
    RateLimitEnforcer enforcer = new RateLimitEnforcer(RateLimitStore.inMemory(new ManualTicker()),
        policies, StoreFailure.DENY, () -> List.of(observer));
    return RateLimitGateway.builder(enforcer, (bytes, off, len) -> null).build();
  }

  @AfterEach
  void clearSecurity() {
    SecurityContextHolder.clearContext();
  }

  @Test
  void aConversationWithToolsIsEstimatedAsTheSameOpenAiRequestBody() {
    Prompt prompt = new Prompt(List.of(
        new SystemMessage("be brief"),
        new UserMessage("weather in Oslo?"),
        AssistantMessage.builder().content("").toolCalls(List.of(
            new AssistantMessage.ToolCall("c1", "function", "weather", "{\"city\":\"Oslo\"}"))).build(),
        ToolResponseMessage.builder().responses(List.of(
            new ToolResponseMessage.ToolResponse("c1", "weather", "4 degrees, rain"))).build()),
        ChatOptions.builder().maxTokens(100).build());
    Map<String, Object> http = Map.of("max_tokens", 100, "messages", List.of(
        Map.of("role", "system", "content", "be brief"),
        Map.of("role", "user", "content", "weather in Oslo?"),
        Map.of("role", "assistant", "content", "",
            "tool_calls", List.of(Map.of("name", "weather", "arguments", "{\"city\":\"Oslo\"}"))),
        Map.of("role", "tool", "content", "", "tool_results", List.of("4 degrees, rain"))));
    assertThat(ESTIMATOR.estimate(PromptBody.of(prompt))).isEqualTo(ESTIMATOR.estimate(http));
    Prompt uncapped = new Prompt(prompt.getInstructions(), ChatOptions.builder().build());
    assertThat(ESTIMATOR.estimate(PromptBody.of(prompt)) - ESTIMATOR.estimate(PromptBody.of(uncapped)))
        .as("the options' maxTokens replaces the default completion (256)").isEqualTo(100 - 256);
  }

  @Test
  void theUsageIsReadItemizedAndAResponseWithoutUsageHasNone() {
    assertThat(ChatUsage.of(response(new DefaultUsage(11, 7)))).isEqualTo(ModelUsage.of(11, 7, 0));
    assertThat(ChatUsage.of(response(new DefaultUsage(11, 7, 20))))
        .isEqualTo(new ModelUsage(20, 11, 7, 0, true));
    assertThat(ChatUsage.of(response(new EmptyUsage()))).isNull();
    assertThat(ChatUsage.of(null)).isNull();
  }

  @Test
  void theDefaultCallerIsTheAuthenticatedPrincipalElseTheParameter() {
    ChatClientRequest request = ChatClientRequest.builder().prompt(new Prompt("hi"))
        .context(Map.of(RateLimitAdvisor.CALLER, "acme")).build();
    ChatClientKeyResolver keys = ChatClientKeyResolver.defaults();
    assertThat(keys.resolve(request)).isEqualTo("acme");
    SecurityContextHolder.getContext().setAuthentication(new AnonymousAuthenticationToken(
        "k", "anonymousUser", AuthorityUtils.createAuthorityList("ROLE_ANONYMOUS")));
    assertThat(keys.resolve(request)).isEqualTo("acme");
    SecurityContextHolder.getContext().setAuthentication(
        UsernamePasswordAuthenticationToken.authenticated("alice", null, List.of()));
    assertThat(keys.resolve(request)).isEqualTo("principal:alice");
    assertThat(keys.resolve(ChatClientRequest.builder().prompt(new Prompt("hi")).build()))
        .isEqualTo("principal:alice");
    SecurityContextHolder.clearContext();
    assertThat(keys.resolve(ChatClientRequest.builder().prompt(new Prompt("hi")).build())).isNull();
  }

  @Test
  void aCallWhoseResponseReportsNoUsageKeepsItsEstimate() {
    ChatClient client = ChatClient.builder((ChatModel) prompt -> response(new EmptyUsage()))
        .defaultAdvisors(RateLimitAdvisor.builder(gateway).build()).build();
    client.prompt("hello").advisors(RateLimitAdvisor.caller("t")).call().content();
    assertThat(reconciled).containsExactly(ESTIMATOR.estimate(
        Map.of("messages", List.of(Map.of("role", "user", "content", "hello")))));
  }

  @Test
  void aStreamThatFailsAfterItsUsageIsSettledWithThatUsage() {
    ChatModel model = new ChatModel() {
      @Override
      public ChatResponse call(Prompt prompt) {
        throw new UnsupportedOperationException();
      }

      @Override
      public Flux<ChatResponse> stream(Prompt prompt) {
        return Flux.just(response(new DefaultUsage(30, 12)))
            .concatWith(Flux.error(new IllegalStateException("the connection broke")));
      }
    };
    ChatClient client = ChatClient.builder(model)
        .defaultAdvisors(RateLimitAdvisor.builder(gateway).build()).build();
    assertThatThrownBy(() -> client.prompt("hello").advisors(RateLimitAdvisor.caller("t")).stream()
        .content().blockLast(Duration.ofSeconds(10))).hasMessageContaining("the connection broke");
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (reconciled.isEmpty() && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertThat(reconciled).containsExactly(42L);
  }

  @Test
  void aStreamCancelledWhileTheStoreDecidesGivesItsAdmittedCallBack() {
    CompletableFuture<Void> decided = new CompletableFuture<>();
    RateLimitStore store = RateLimitStore.inMemory(new ManualTicker());
    RateLimitStore slow = (RateLimitStore) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {RateLimitStore.class}, (proxy, method, args) -> {
          Object answer;
          try {
            answer = method.invoke(store, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          return method.getName().equals("reserveAsync")
              ? decided.thenCompose(ignored -> (CompletionStage<?>) answer) : answer;
        });
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(100), null,
            ModelTokenLimit.perMinute(1_000_000), ConcurrencyLimit.of(1)))
        .build();
    RateLimitEnforcer enforcer = new RateLimitEnforcer(slow, policies, StoreFailure.DENY,
        () -> List.of(new RateLimitObserver() {
          @Override
          public void onDecision(RateLimitOutcome outcome, long nanos) {}

          @Override
          public void onReconcile(String policy, long estimate, long actual) {
            reconciled.add(actual);
          }
        }));
    AtomicInteger streamed = new AtomicInteger();
    ChatModel model = new ChatModel() {
      @Override
      public ChatResponse call(Prompt prompt) {
        return response(new DefaultUsage(1, 1));
      }

      @Override
      public Flux<ChatResponse> stream(Prompt prompt) {
        streamed.incrementAndGet();
        return Flux.just(response(new DefaultUsage(1, 1)));
      }
    };
    ChatClient client = ChatClient.builder(model).defaultAdvisors(RateLimitAdvisor.builder(
        RateLimitGateway.builder(enforcer, (bytes, off, len) -> null).build()).build()).build();

    Disposable stream = client.prompt("hello").advisors(RateLimitAdvisor.caller("t")).stream()
        .content().subscribe();
    stream.dispose();
    decided.complete(null); // the store admits the call after its subscriber went away
    assertThat(streamed).as("the model is never called").hasValue(0);
    assertThat(reconciled).as("its model tokens refunded").containsExactly(0L);
    // its slot was released: the caller's next call takes it
    assertThat(client.prompt("hello").advisors(RateLimitAdvisor.caller("t")).call().content())
        .isEqualTo("hi");
  }

  @Test
  void aCallToAnUpstreamReportsTheRateLimitsItsResponseCarries() {
    Upstream upstream = new Upstream("openai", WindowLimit.perMinute(100), null, null);
    RateLimitStore store = RateLimitStore.inMemory(new ManualTicker());
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(100), null))
        .build();
    RateLimitEnforcer enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY,
        List::of, RateLimitPlanResolver.fixed(policies.defaultPlan()),
        UpstreamRoutes.builder().upstream(upstream, List.of(), List.of("default")).build());
    RateLimit limits = new RateLimit() {
      public Long getRequestsLimit() {
        return 0L; // out of range: left out
      }

      public Long getRequestsRemaining() {
        return 0L;
      }

      public Duration getRequestsReset() {
        return Duration.ofSeconds(4);
      }

      public Long getTokensLimit() {
        return 5000L;
      }

      public Long getTokensRemaining() {
        return -1L; // out of range: left out
      }

      public Duration getTokensReset() {
        return Duration.ofDays(3); // out of range: left out
      }
    };
    ChatModel model = prompt -> ChatResponse.builder()
        .generations(List.of(new Generation(new AssistantMessage("hi"))))
        .metadata(ChatResponseMetadata.builder().usage(new DefaultUsage(1, 1)).rateLimit(limits)
            .build()).build();
    ChatClient client = ChatClient.builder(model).defaultAdvisors(RateLimitAdvisor.builder(
        RateLimitGateway.builder(enforcer, (bytes, off, len) -> null).build()).build()).build();
    assertThat(client.prompt("hello").advisors(RateLimitAdvisor.caller("t")).call().content())
        .isEqualTo("hi");
    assertThat(store.upstreamStatus(upstream).closedForMs()).isEqualTo(4000);
    assertThatThrownBy(() -> client.prompt("hello").advisors(RateLimitAdvisor.caller("u")).call()
        .content())
        .isInstanceOf(RateLimitExceededException.class)
        .hasMessageContaining("UPSTREAM_LIMIT");
    assertThat(ChatRateLimit.of(response(new DefaultUsage(1, 1))))
        .as("a response without rate limits says nothing").isSameAs(ProviderReport.EMPTY);
  }

  @Test
  void anInvalidPolicyOrParameterIsRejectedNamingIt() {
    assertThatThrownBy(() -> RateLimitAdvisor.builder(gateway).policy("nope"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'nope'")
        .hasMessageContaining("[default]");
    assertThatThrownBy(() -> RateLimitAdvisor.caller(" "))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("caller");
    assertThatThrownBy(() -> RateLimitAdvisor.builder(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gateway");
  }

  private static ChatResponse response(org.springframework.ai.chat.metadata.Usage usage) {
    return ChatResponse.builder().generations(List.of(new Generation(new AssistantMessage("hi"))))
        .metadata(ChatResponseMetadata.builder().usage(usage).build()).build();
  }
}
