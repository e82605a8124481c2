package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.StoreFailure;
import io.github.llmratelimiter.springai.ChatClientKeyResolver;
import io.github.llmratelimiter.springai.RateLimitAdvisor;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.CallAdvisor;
import org.springframework.ai.chat.client.advisor.api.CallAdvisorChain;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.metadata.ChatResponseMetadata;
import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;

/**
 * What the Spring AI advisor costs beyond the decision it makes, on the in-memory store over 10,000
 * tenants: {@code decideAndSettle} is a call decided and settled through the enforcer with the
 * estimate of an already parsed OpenAI request body (what a web front door has), {@code
 * adviseCall} the same call through {@code RateLimitAdvisor.adviseCall} with a chain that answers at
 * once (the caller read from the call's parameter, the prompt turned into the body it estimates,
 * the usage read from the response). The model's own time is not in either.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class SpringAiAdvisorBenchmark {

  private static final String MODEL = "gpt-4o-mini";

  private final ModelTokenEstimator estimator = ModelTokenEstimator.defaults();
  private final ModelUsage usage = ModelUsage.of(11, 7, 0);
  private RateLimitEnforcer enforcer;
  private RateLimitAdvisor advisor;
  private RateLimitKey[] keys;
  private ChatClientRequest[] requests;
  private Map<String, Object> body;
  private CallAdvisorChain chain;
  private int next;

  /** Builds the store, the advisor, one request per tenant and a chain that answers at once. */
  @Setup
  public void setUp() {
    Budget budget = new Budget("chat", new WindowLimit(Limits.ALLOW_WINDOW_LIMIT, Limits.ALLOW_WINDOW),
        new BucketLimit(Limits.ALLOW_TOKENS, Limits.ALLOW_REFILL_PER_SECOND),
        new ModelTokenLimit(Long.MAX_VALUE / 4, Duration.ofMillis(Limits.ALLOW_WINDOW_MS)));
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy(RateLimitPolicies.DEFAULT_POLICY, KeyScope.API_KEY_AND_MODEL, budget).build();
    enforcer = new RateLimitEnforcer(RateLimitStore.inMemory(), policies, StoreFailure.DENY, List::of);
    RateLimitGateway gateway = RateLimitGateway.builder(enforcer, (bytes, off, len) -> null).build();
    advisor = RateLimitAdvisor.builder(gateway).keyResolver(ChatClientKeyResolver.parameter()).build();
    Prompt prompt = new Prompt(List.of(new SystemMessage("You are a helpful assistant."),
        new UserMessage("What is the capital of Norway? Answer in one word.")),
        ChatOptions.builder().model(MODEL).maxTokens(64).build());
    body = Map.of("model", MODEL, "max_tokens", 64, "messages", List.of(
        Map.of("role", "system", "content", "You are a helpful assistant."),
        Map.of("role", "user", "content", "What is the capital of Norway? Answer in one word.")));
    String[] tenants = Limits.keys("tenant", Limits.KEY_COUNT);
    keys = new RateLimitKey[tenants.length];
    requests = new ChatClientRequest[tenants.length];
    for (int i = 0; i < tenants.length; i++) {
      keys[i] = RateLimitKey.of(tenants[i], MODEL);
      requests[i] = ChatClientRequest.builder().prompt(prompt)
          .context(Map.of(RateLimitAdvisor.CALLER, tenants[i])).build();
    }
    ChatClientResponse response = ChatClientResponse.builder().chatResponse(ChatResponse.builder()
        .generations(List.of(new Generation(new AssistantMessage("Oslo"))))
        .metadata(ChatResponseMetadata.builder().usage(new DefaultUsage(11, 7)).build()).build())
        .build();
    chain = new CallAdvisorChain() {
      @Override
      public ChatClientResponse nextCall(ChatClientRequest request) {
        return response;
      }

      @Override
      public List<CallAdvisor> getCallAdvisors() {
        return List.of();
      }

      @Override
      public CallAdvisorChain copy(CallAdvisor after) {
        return this;
      }
    };
  }

  private int next() {
    int i = next;
    next = i + 1 == keys.length ? 0 : i + 1;
    return i;
  }

  /** A call decided and settled through the enforcer, its body parsed already. */
  @Benchmark
  public RateLimitOutcome decideAndSettle() {
    RateLimitOutcome outcome = enforcer.acquire(null, keys[next()], 1, () -> estimator.estimate(body));
    outcome.modelTokens().settleUsage(usage, false);
    return outcome;
  }

  /** The same call through the advisor. */
  @Benchmark
  public ChatClientResponse adviseCall() {
    return advisor.adviseCall(requests[next()], chain);
  }
}
