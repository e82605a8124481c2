package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.core.StoreAdministration;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The charge step under plans and limits on calls in flight, on the in-memory store with a manual
 * ticker: a key's plan picks the limits its calls carry (headers and outcome included) without
 * resetting anything it spent, and a call's slot is held until its front door finishes it, once.
 */
class PlansAndSlotsGatewayTests {

  private static final String KEY = "sk-plans-gateway-0123456789";
  private static final JsonReader JSON = (bytes, off, len) -> null;

  private final ManualTicker ticker = new ManualTicker();
  private final RateLimitStore store = RateLimitStore.inMemory(ticker);
  private final List<RateLimitOutcome> observed = new ArrayList<>();
  private final RateLimitPlanResolver resolver;
  private final RateLimitGateway gateway;

  PlansAndSlotsGatewayTests() {
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null))
        .policy("chat", KeyScope.API_KEY,
            new Budget("chat", WindowLimit.perMinute(3), null, null, ConcurrencyLimit.of(2)))
        .plan("free")
        .plan("pro", "chat",
            new Budget("chat", WindowLimit.perMinute(60), null, null, ConcurrencyLimit.of(5)), Map.of())
        .defaultPlan("free")
        .build();
    resolver = RateLimitPlanResolver.caching(store.planAssignments().orElseThrow(), policies, ticker,
        Duration.ofSeconds(5), 1000);
    RateLimitEnforcer enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY,
        () -> List.of((outcome, nanos) -> observed.add(outcome)), resolver);
    gateway = RateLimitGateway.builder(enforcer, JSON).build();
  }

  @AfterEach
  void close() {
    resolver.close();
    store.close();
  }

  private RateLimitContext context() {
    return gateway.context(-1, null);
  }

  private RateLimitOutcome charge(RateLimitContext context) {
    return gateway.charge(context, "chat", RateLimitKey.of(KEY, null), 1);
  }

  private RateLimitOutcome chargeAsync(RateLimitContext context) throws Exception {
    return gateway.chargeAsync(context, "chat", RateLimitKey.of(KEY, null), 1)
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private RateLimitOutcome denied(RateLimitContext context) {
    try {
      charge(context);
    } catch (RateLimitExceededException e) {
      return e.outcome();
    }
    throw new AssertionError("the call was admitted");
  }

  private Map<String, String> headers(RateLimitOutcome outcome) {
    return gateway.headers(outcome).stream()
        .collect(Collectors.toMap(ResponseHeader::name, ResponseHeader::value));
  }

  private long windowUsed() {
    Budget chat = gateway.enforcer().policies().policy("chat").budgets(RateLimitKey.of(KEY, null)).get(0);
    return admin(store).inspect(chat, KEY).map(KeySnapshot::windowUsed).orElse(0L);
  }

  private long inFlight() {
    Budget chat = gateway.enforcer().policies().policy("chat").budgets(RateLimitKey.of(KEY, null)).get(0);
    return admin(store).inspect(chat, KEY).map(KeySnapshot::inFlight).orElse(0L);
  }

  @Test
  void aPlanChangeChangesTheLimitsAndResetsNothingSpent() throws Exception {
    for (int i = 0; i < 3; i++) {
      RateLimitContext c = context();
      assertThat(charge(c).plan()).isEqualTo("free");
      gateway.finish(c, null, false);
    }
    RateLimitOutcome free = denied(context());
    assertThat(free.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(free.plan()).isEqualTo("free");
    assertThat(headers(free)).containsEntry("x-ratelimit-limit-requests", "3")
        .containsEntry("RateLimit-Policy", "\"chat\";q=3;w=60, \"chat-concurrency\";q=2;qu=\"concurrent-requests\"");

    resolver.assign(KEY, "pro");
    RateLimitContext c = context();
    RateLimitOutcome pro = chargeAsync(c);
    assertThat(pro.plan()).isEqualTo("pro");
    assertThat(pro.decision().allowed()).isTrue();
    // the window kept its 3 calls (4 of 60 now); the decision's remaining is the smallest
    // component, 4 of 5 slots; the headers tell each budget its own: 56 requests, 4 slots
    assertThat(windowUsed()).isEqualTo(4);
    assertThat(pro.decision().remaining()).isEqualTo(4);
    assertThat(headers(pro)).containsEntry("x-ratelimit-limit-requests", "60")
        .containsEntry("x-ratelimit-remaining-requests", "56")
        .containsEntry("RateLimit", "\"chat\";r=56;t=60, \"chat-concurrency\";r=4")
        .containsEntry("RateLimit-Policy", "\"chat\";q=60;w=60, \"chat-concurrency\";q=5;qu=\"concurrent-requests\"");
    gateway.finish(c, null, false);

    // back to free: the 4 calls in the window count against 3, so the key is denied
    resolver.assign(KEY, null);
    RateLimitOutcome back = denied(context());
    assertThat(back.plan()).isEqualTo("free");
    assertThat(back.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(windowUsed()).isEqualTo(4);
    assertThat(observed).extracting(RateLimitOutcome::plan)
        .containsExactly("free", "free", "free", "free", "pro", "free");
  }

  @Test
  void aCallHoldsItsSlotUntilFinishedAndReleasesItOnce() throws Exception {
    resolver.assign(KEY, "pro"); // 60 a minute: only the slots bind
    resolver.assign(KEY, null);  // free: 2 slots, 3 a minute
    RateLimitContext first = context();
    RateLimitContext second = context();
    assertThat(charge(first).slots()).isNotNull();
    assertThat(chargeAsync(second).slots()).isNotNull();
    assertThat(first.open()).isTrue();

    RateLimitOutcome full = denied(context());
    assertThat(full.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    assertThat(full.decision().retryable()).isTrue();
    // never "retry now": the wait until the earliest lease expires, 10 minutes
    assertThat(full.decision().retryAfterMs()).isEqualTo(600_000);
    RateLimitRejection rejection = gateway.reject(new RateLimitExceededException(full), "/v1/chat");
    assertThat(rejection.problem().status()).isEqualTo(429);
    assertThat(rejection.headers()).contains(new ResponseHeader("Retry-After", "600"));
    assertThat(rejection.problem().toString()).doesNotContain("estimatedModelTokens");
    assertThat(windowUsed()).as("a CONCURRENCY_LIMIT deny charges nothing").isEqualTo(2);

    gateway.finish(first, null, false);
    assertThat(first.open()).isFalse();
    assertThat(first.slots().released()).isTrue();
    assertThat(first.slots().release()).as("a second release does nothing").isFalse();
    gateway.finishAsync(first, null, true).toCompletableFuture().get(10, TimeUnit.SECONDS);

    RateLimitContext third = context();
    assertThat(charge(third).decision().allowed()).isTrue();
    // still one slot held by the second call, one by the third: the fourth is denied
    assertThat(denied(context()).decision().reason()).isIn(Reason.CONCURRENCY_LIMIT, Reason.RPM_LIMIT);
    gateway.finishAsync(second, null, false).toCompletableFuture().get(10, TimeUnit.SECONDS);
    gateway.finish(third, null, false);
    ticker.advance(Duration.ofMinutes(1));
    assertThat(charge(context()).decision().allowed()).isTrue();
  }

  @Test
  void aLeaseNeverReleasedExpiresOnTheStoresClock() {
    RateLimitContext a = context();
    RateLimitContext b = context();
    charge(a);
    charge(b);
    // the instance that held them died: nobody finishes a or b
    ticker.advance(Duration.ofMinutes(10).minusMillis(1));
    assertThat(denied(context()).decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    ticker.advance(Duration.ofMillis(1));
    assertThat(charge(context()).decision().allowed()).isTrue();
  }

  @Test
  void aResolverNamingAnUnknownPlanOrFailingGivesTheDefaultPlan() {
    RateLimitPolicies policies = gateway.enforcer().policies();
    int n = 0;
    for (RateLimitPlanResolver bad : List.<RateLimitPlanResolver>of(apiKey -> "gold", apiKey -> {
      throw new IllegalStateException("database down");
    })) {
      RateLimitKey other = RateLimitKey.of("sk-other-" + n++ + "-0123456789", null);
      RateLimitEnforcer enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY, List::of, bad);
      RateLimitOutcome o = enforcer.acquire("chat", other, 1, () -> 0);
      assertThat(o.plan()).isEqualTo("free");
      o.slots().release();
      RateLimitOutcome async = enforcer.acquireAsync("chat", other,
          1, () -> 0).toCompletableFuture().join();
      assertThat(async.plan()).isEqualTo("free");
      async.slots().release();
    }
  }

  @Test
  void aChargeCancelledWhileTheStoreDecidesReleasesItsSlotOnceTheStoreAnswers() throws Exception {
    CompletableFuture<Void> answer = new CompletableFuture<>();
    RateLimitStore slow = new ForwardingStore(store) { // answers once the test lets it
      @Override
      public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
          double cost, long estimate, Composition c) {
        return answer.thenApply(go -> delegate.reserve(levels, keys, cost, estimate, c));
      }
    };
    RateLimitEnforcer enforcer = new RateLimitEnforcer(slow, gateway.enforcer().policies(),
        StoreFailure.DENY, List::of, RateLimitPlanResolver.fixed("free")); // decides at once
    RateLimitGateway pending = RateLimitGateway.builder(enforcer, JSON).build();
    RateLimitContext inRequest = context();
    CompletableFuture<RateLimitOutcome> withContext = pending.chargeAsync(inRequest, "chat",
        RateLimitKey.of(KEY, null), 1).toCompletableFuture();
    CompletableFuture<RateLimitOutcome> outside = pending.chargeAsync(null, "chat",
        RateLimitKey.of(KEY, null), 1).toCompletableFuture();
    withContext.cancel(false); // the callers went away
    outside.cancel(false);
    answer.complete(null);
    assertThat(windowUsed()).as("both were charged").isEqualTo(2);
    assertThat(inFlight())
        .as("and both slots released").isZero();
    assertThat(inRequest.charged()).isTrue();
    assertThat(inRequest.open()).isFalse();
  }

  @Test
  void aStoreThatThrowsAnErrorFailsTheChargeWhetherThePlanCameAtOnceOrLater() {
    Error broken = new Error("the store broke");
    RateLimitStore throwing = new ForwardingStore(store) {
      @Override
      public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
          double cost, long estimate, Composition c) {
        throw broken;
      }
    };
    CompletableFuture<String> later = new CompletableFuture<>();
    RateLimitPlanResolver remote = new RateLimitPlanResolver() {
      @Override
      public String plan(String apiKey) {
        return "free";
      }

      @Override
      public CompletionStage<String> planAsync(String apiKey) {
        return later; // the plan comes on another stage, as from a remote store
      }
    };
    for (RateLimitPlanResolver plans : List.of(remote, RateLimitPlanResolver.fixed("free"))) {
      RateLimitEnforcer enforcer = new RateLimitEnforcer(throwing, gateway.enforcer().policies(),
          StoreFailure.DENY, List::of, plans);
      CompletableFuture<RateLimitOutcome> charged = RateLimitGateway.builder(enforcer, JSON).build()
          .chargeAsync(context(), "chat", RateLimitKey.of(KEY, null), 1).toCompletableFuture();
      later.complete("free");
      assertThat(charged).as("completed, not left pending").isCompletedExceptionally();
      assertThat(charged.handle((outcome, failure) -> failure).join()).isSameAs(broken);
    }
  }

  @Test
  void aProblemBodyNeverNamesTheKey() {
    charge(context());
    charge(context());
    RateLimitRejection r = gateway.reject(new RateLimitExceededException(denied(context())), "/v1/chat");
    assertThat(r.problem().toString()).doesNotContain(KEY);
    assertThat(new String(r.problem().toString().getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8))
        .contains("CONCURRENCY_LIMIT");
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
