package io.github.llmratelimiter.springai;

import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.gateway.CallSlots;
import io.github.llmratelimiter.gateway.KeySource;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.ModelTokenReservation;
import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitExceededException;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.Advisor;
import org.springframework.ai.chat.client.advisor.api.CallAdvisor;
import org.springframework.ai.chat.client.advisor.api.CallAdvisorChain;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisor;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisorChain;
import org.springframework.ai.chat.prompt.ChatOptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * A Spring AI {@code ChatClient} advisor that rate-limits the calls made through it with the
 * gateway's policies, store, quotas and metrics, as every other front door does.
 *
 * <p>Before the model is called, it finds the caller ({@link ChatClientKeyResolver}), the policy
 * (the call's {@link #POLICY} parameter, else this advisor's, else the default policy) and the model
 * (the prompt's options, which hold the chat model's defaults), estimates the prompt's model tokens
 * by the rule the web front doors apply to the same OpenAI request ({@link ModelTokenEstimator}), and
 * decides the call in one atomic store call on every level of the policy. A deny throws {@link
 * RateLimitExceededException} (for a stream, as its error signal), carrying the {@code Decision}:
 * its reason, retry-after and the budget that denied; nothing is sent to the model.
 *
 * <p>After the call, the reserved model tokens and quotas are settled with the usage the {@code
 * ChatResponse} metadata reports; a stream with the last usage one of its responses reported, when
 * it completes. A call that reported no usage keeps its estimate (a stream cancelled before its
 * usage, too); a call that fails before reporting usage is refunded. Slots taken on limits on calls
 * in flight are released once the call or stream is over, exactly once. A stream is charged and
 * settled without blocking (through the store's asynchronous API).
 *
 * <p>A call that goes to an upstream ({@code ratelimiter.upstreams}, {@link
 * io.github.llmratelimiter.gateway.UpstreamRoutes}) is decided with it, and the rate limits its
 * response's metadata reports ({@code ChatResponseMetadata.getRateLimit()}: the remaining requests
 * and tokens with their resets, the limits), when the chat model fills them, are applied to the
 * upstream for every caller; a stream reports the last ones it carried, when it completes. A
 * model's error (its 429 included) carries no headers here: it reports nothing.
 *
 * <p>Its order ({@link #DEFAULT_ORDER}) places it inside Spring AI's chat-memory advisors (the
 * estimate sees the remembered messages) and outside its tool-calling advisor (a call and its tool
 * rounds are charged once and settled with their accumulated usage).
 */
public final class RateLimitAdvisor implements CallAdvisor, StreamAdvisor {

  /** The advisor parameter that names the caller of a call, for the default key resolver. */
  public static final String CALLER = "ratelimiter.caller";

  /** The advisor parameter that names the policy a call is charged on. */
  public static final String POLICY = "ratelimiter.policy";

  /** The default order: after the chat-memory advisors, before the tool-calling advisor. */
  public static final int DEFAULT_ORDER = Advisor.DEFAULT_CHAT_MEMORY_PRECEDENCE_ORDER + 50;

  /** The status a response with a body stands for. */
  private static final int OK = 200;

  private final RateLimitGateway gateway;
  private final RateLimitEnforcer enforcer;
  private final ModelTokenEstimator estimator;
  private final ChatClientKeyResolver keys;
  private final @Nullable String policy;
  private final int order;

  private RateLimitAdvisor(Builder b) {
    this.gateway = b.gateway;
    this.enforcer = b.gateway.enforcer();
    this.estimator = b.estimator;
    this.keys = b.keys;
    this.policy = b.policy;
    this.order = b.order;
  }

  /**
   * Starts an advisor that charges through a gateway.
   *
   * @param gateway the gateway (its enforcer, store, policies and missing-key rule)
   * @return the builder
   * @throws IllegalArgumentException if {@code gateway} is null
   */
  public static Builder builder(RateLimitGateway gateway) {
    return new Builder(gateway);
  }

  /**
   * Returns the advisor parameters that name a call's caller, for {@code
   * chatClient.prompt().advisors(RateLimitAdvisor.caller("acme"))}.
   *
   * @param caller the caller's key, not blank
   * @return the parameters
   * @throws IllegalArgumentException if {@code caller} is null or blank
   */
  public static Consumer<ChatClient.AdvisorSpec> caller(String caller) {
    return param(CALLER, "caller", caller);
  }

  /**
   * Returns the advisor parameters that name the policy a call is charged on.
   *
   * @param policy the policy's name, not blank
   * @return the parameters
   * @throws IllegalArgumentException if {@code policy} is null or blank
   */
  public static Consumer<ChatClient.AdvisorSpec> policy(String policy) {
    return param(POLICY, "policy", policy);
  }

  private static Consumer<ChatClient.AdvisorSpec> param(String key, String name, String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank, but was '" + value + "'");
    }
    return spec -> spec.param(key, value);
  }

  @Override
  public ChatClientResponse adviseCall(ChatClientRequest request, CallAdvisorChain chain) {
    Charge charge = charge(request);
    RateLimitOutcome outcome = admitted(
        enforcer.acquire(charge.policy(), charge.key(), 1, charge.estimate()));
    ChatClientResponse response;
    try {
      response = chain.nextCall(request);
    } catch (RuntimeException | Error e) {
      finish(outcome, null, true);
      throw e;
    }
    finish(outcome, ChatUsage.of(response.chatResponse()), false);
    Upstream upstream = outcome.upstream();
    if (upstream != null) {
      enforcer.report(upstream, ChatRateLimit.of(response.chatResponse()), OK);
    }
    return response;
  }

  @Override
  public Flux<ChatClientResponse> adviseStream(ChatClientRequest request, StreamAdvisorChain chain) {
    return Mono.defer(() -> Mono.fromFuture(chargeAsync(charge(request))))
        .flatMapMany(outcome -> {
          AtomicReference<@Nullable ModelUsage> last = new AtomicReference<>();
          AtomicReference<ProviderReport> limits = new AtomicReference<>(ProviderReport.EMPTY);
          return chain.nextStream(request)
              .doOnNext(response -> {
                ModelUsage usage = ChatUsage.of(response.chatResponse());
                if (usage != null) {
                  last.set(usage);
                }
                ProviderReport report = ChatRateLimit.of(response.chatResponse());
                if (!report.isEmpty()) {
                  limits.set(report);
                }
              })
              .doFinally(signal -> {
                finishAsync(outcome, last.get(), signal == SignalType.ON_ERROR);
                Upstream upstream = outcome.upstream();
                if (upstream != null && signal == SignalType.ON_COMPLETE) {
                  enforcer.reportAsync(upstream, limits.get(), OK);
                }
              });
        });
  }

  /** What a call is charged: the policy, the caller and its model, and its estimate. */
  private record Charge(@Nullable String policy, RateLimitKey key, LongSupplier estimate) {}

  private Charge charge(ChatClientRequest request) {
    String caller = gateway.callerKey(KeySource.EXPRESSION, keys.resolve(request));
    ChatOptions options = request.prompt().getOptions();
    String model = options == null ? null : options.getModel();
    Object named = request.context().get(POLICY);
    String policyName = named != null ? named.toString() : policy;
    return new Charge(policyName, RateLimitKey.of(caller, model),
        () -> estimator.estimate(PromptBody.of(request.prompt())));
  }

  private static RateLimitOutcome admitted(RateLimitOutcome outcome) {
    if (outcome.decision().denied()) {
      throw new RateLimitExceededException(outcome);
    }
    return outcome;
  }

  /**
   * Decides a call without blocking; an admitted call whose subscriber cancelled while the store
   * decided is given back (its slots released, its model tokens refunded).
   */
  private CompletableFuture<RateLimitOutcome> chargeAsync(Charge charge) {
    CompletableFuture<RateLimitOutcome> result = new CompletableFuture<>();
    enforcer.acquireAsync(charge.policy(), charge.key(), 1, charge.estimate())
        .whenComplete((outcome, failure) -> {
          if (failure != null) {
            result.completeExceptionally(failure);
            return;
          }
          RateLimitOutcome admitted;
          try {
            admitted = admitted(outcome);
          } catch (RateLimitExceededException e) {
            result.completeExceptionally(e);
            return;
          }
          if (!result.complete(admitted)) {
            admitted.abandon();
          }
        });
    return result;
  }

  private static void finish(RateLimitOutcome outcome, @Nullable ModelUsage usage, boolean failed) {
    CallSlots slots = outcome.slots();
    try {
      ModelTokenReservation tokens = outcome.modelTokens();
      if (tokens != null) {
        tokens.settleUsage(usage, failed);
      }
    } finally {
      if (slots != null) {
        slots.release();
      }
    }
  }

  private static void finishAsync(RateLimitOutcome outcome, @Nullable ModelUsage usage, boolean failed) {
    CallSlots slots = outcome.slots();
    if (slots != null) {
      slots.releaseAsync();
    }
    ModelTokenReservation tokens = outcome.modelTokens();
    if (tokens != null) {
      tokens.settleUsageAsync(usage, failed);
    }
  }

  @Override
  public String getName() {
    return "RateLimitAdvisor";
  }

  @Override
  public int getOrder() {
    return order;
  }

  @Override
  public String toString() {
    return "RateLimitAdvisor[policy=" + policy + ", order=" + order + "]";
  }

  /** Builds a {@link RateLimitAdvisor}; every setting but the gateway has a default. */
  public static final class Builder {

    private final RateLimitGateway gateway;
    private ModelTokenEstimator estimator = ModelTokenEstimator.defaults();
    private ChatClientKeyResolver keys = ChatClientKeyResolver.defaults();
    private @Nullable String policy;
    private int order = DEFAULT_ORDER;

    private Builder(RateLimitGateway gateway) {
      if (gateway == null) {
        throw new IllegalArgumentException("gateway must not be null");
      }
      this.gateway = gateway;
    }

    /**
     * Sets the estimator of a prompt's model tokens; the default is {@link
     * ModelTokenEstimator#defaults()} (in Spring Boot, the gateway's own estimator bean).
     *
     * @param modelTokenEstimator the estimator
     * @return this builder
     * @throws IllegalArgumentException if it is null
     */
    public Builder estimator(ModelTokenEstimator modelTokenEstimator) {
      if (modelTokenEstimator == null) {
        throw new IllegalArgumentException("estimator must not be null");
      }
      this.estimator = modelTokenEstimator;
      return this;
    }

    /**
     * Sets how a call's caller is found; the default is {@link ChatClientKeyResolver#defaults()}.
     *
     * @param resolver the resolver
     * @return this builder
     * @throws IllegalArgumentException if it is null
     */
    public Builder keyResolver(ChatClientKeyResolver resolver) {
      if (resolver == null) {
        throw new IllegalArgumentException("keyResolver must not be null");
      }
      this.keys = resolver;
      return this;
    }

    /**
     * Sets the policy this advisor's calls are charged on, unless a call names its own ({@link
     * #POLICY}); the default is the gateway's default policy.
     *
     * @param policyName the policy's name, not blank
     * @return this builder
     * @throws IllegalArgumentException if it is null or blank, or not one of the gateway's policies
     */
    public Builder policy(String policyName) {
      if (policyName == null || policyName.isBlank()
          || !gateway.enforcer().policies().contains(policyName)) {
        throw new IllegalArgumentException("policy must be one of the gateway's policies "
            + gateway.enforcer().policies().all().keySet() + ", but was '" + policyName + "'");
      }
      this.policy = policyName;
      return this;
    }

    /**
     * Sets the advisor's order in the chain; the default is {@link RateLimitAdvisor#DEFAULT_ORDER}.
     *
     * @param advisorOrder the order
     * @return this builder
     */
    public Builder order(int advisorOrder) {
      this.order = advisorOrder;
      return this;
    }

    /**
     * Builds the advisor.
     *
     * @return the advisor
     */
    public RateLimitAdvisor build() {
      return new RateLimitAdvisor(this);
    }
  }
}
