package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The charge step with upstreams, on the in-memory store with a manual ticker: a routed call is
 * decided with its upstream in one store call and keeps it on its outcome; an upstream deny is a
 * 429 of its own kind with the caller's headers; the upstream's slot is released with the call; a
 * provider's report closes the upstream for every caller; a call with no upstream is decided as
 * without upstreams.
 */
class UpstreamGatewayTests {

  private static final Upstream OPENAI = new Upstream("openai", WindowLimit.perMinute(2),
      ModelTokenLimit.perMinute(1000), ConcurrencyLimit.of(2));

  private final ManualTicker ticker = new ManualTicker();
  private final RateLimitStore store = RateLimitStore.inMemory(ticker);
  private final List<Integer> reportedStatuses = new ArrayList<>();
  private final RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
      .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(100), null))
      .policy("chat", KeyScope.API_KEY, new Budget("chat", WindowLimit.perMinute(100), null))
      .policy("solo", KeyScope.API_KEY, new Budget("solo", WindowLimit.perMinute(100), null))
      .policy("shadow", KeyScope.API_KEY, new Budget("shadow", WindowLimit.perMinute(1), null))
      .enforce("shadow", false)
      .build();
  private final RateLimitGateway gateway = gateway(UpstreamRoutes.builder()
      .upstream(OPENAI, List.of("gpt-4o*"), List.of("chat")).build());

  private RateLimitGateway gateway(UpstreamRoutes routes) {
    RateLimitObserver reports = new RateLimitObserver() {
      @Override
      public void onDecision(RateLimitOutcome outcome, long nanos) {}

      @Override
      public void onProviderReport(Upstream upstream, ProviderReport report, int status) {
        reportedStatuses.add(status);
      }
    };
    RateLimitEnforcer enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY,
        () -> List.of(reports), RateLimitPlanResolver.fixed(policies.defaultPlan()), routes);
    return RateLimitGateway.builder(enforcer, (bytes, off, len) -> null).build();
  }

  @AfterEach
  void close() {
    store.close();
  }

  private RateLimitOutcome charge(RateLimitContext context, String policy, String key, String model) {
    return gateway.charge(context, policy, RateLimitKey.of(key, model), 1);
  }

  private RateLimitOutcome denied(String policy, String key, String model) {
    try {
      charge(gateway.context(-1, null), policy, key, model);
    } catch (RateLimitExceededException e) {
      return e.outcome();
    }
    throw new AssertionError("the call was admitted");
  }

  private static Map<String, String> headers(List<ResponseHeader> headers) {
    return headers.stream().collect(Collectors.toMap(ResponseHeader::name, ResponseHeader::value));
  }

  private static Map<String, List<String>> provider(String... pairs) {
    Map<String, List<String>> map = new HashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      map.computeIfAbsent(pairs[i], n -> new ArrayList<>()).add(pairs[i + 1]);
    }
    return map;
  }

  private long windowUsed(String policy, String key) {
    Budget b = policies.policy(policy).budgets(RateLimitKey.of(key, null)).get(0);
    return store.administration().orElseThrow().inspect(b, key).map(KeySnapshot::windowUsed)
        .orElse(0L);
  }

  @Test
  void aRoutedCallKeepsItsUpstreamAndItsHeadersShowOnlyTheCallersPolicy() {
    RateLimitContext c = gateway.context(-1, null);
    RateLimitOutcome outcome = charge(c, "solo", "sk-a", "gpt-4o-mini");
    assertThat(outcome.upstream()).as("the model routes it").isEqualTo(OPENAI);
    assertThat(outcome.reservation().levels()).extracting(Budget::name)
        .containsExactly("solo", "upstream:openai");
    assertThat(outcome.slots()).as("the upstream's slot").isNotNull();
    assertThat(headers(gateway.headers(outcome)))
        .containsEntry("RateLimit-Policy", "\"solo\";q=100;w=60")
        .containsEntry("RateLimit", "\"solo\";r=99;t=60")
        .containsEntry("x-ratelimit-remaining-requests", "99")
        .doesNotContainKey("x-ratelimit-remaining-tokens");
    assertThat(store.upstreamStatus(OPENAI).inFlight()).isEqualTo(1);
    gateway.finish(c, null, false);
    assertThat(store.upstreamStatus(OPENAI).inFlight()).isZero();
  }

  @Test
  void aCallOnNoUpstreamIsDecidedAsWithoutUpstreams() {
    RateLimitOutcome outcome = charge(gateway.context(-1, null), "solo", "sk-b", "claude-3");
    assertThat(outcome.upstream()).isNull();
    assertThat(outcome.reservation().levels()).extracting(Budget::name).containsExactly("solo");
    assertThat(outcome.slots()).isNull();
    assertThat(outcome.modelTokens()).isNull();
    RateLimitOutcome without = gateway(UpstreamRoutes.NONE).charge(gateway.context(-1, null),
        "solo", RateLimitKey.of("sk-b2", "claude-3"), 1);
    assertThat(headers(gateway.headers(outcome))).isEqualTo(headers(gateway.headers(without)));
    assertThat(gateway.report(gateway.context(-1, null), 429, provider()::get)).isFalse();
  }

  @Test
  void aFullUpstreamDeniesWithItsOwnProblemAndChargesTheCallerNothing() {
    for (String key : List.of("sk-1", "sk-2")) {
      RateLimitContext c = gateway.context(-1, null);
      charge(c, "chat", key, null);
      gateway.finish(c, null, false); // its slot is free again: the window is what is full
    }
    RateLimitOutcome third = denied("chat", "sk-3", null);
    assertThat(third.decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(third.upstreamDenied()).isTrue();
    assertThat(third.upstream()).isEqualTo(OPENAI);
    assertThat(windowUsed("chat", "sk-3")).as("nothing charged to the caller").isZero();
    RateLimitRejection r = gateway.reject(new RateLimitExceededException(third), "/v1/chat");
    assertThat(r.problem().status()).isEqualTo(429);
    assertThat(r.problem().type()).isEqualTo(DefaultRateLimitProblemFactory.UPSTREAM_LIMITED_TYPE);
    assertThat(r.problem().title()).isEqualTo("Upstream capacity exhausted");
    assertThat(r.problem().members()).containsEntry("reason", "UPSTREAM_LIMIT")
        .containsEntry("upstream", "openai").containsEntry("policy", "chat")
        .containsEntry("retryable", true).containsEntry("retryAfterMs", 60_000L);
    Map<String, String> headers = headers(r.headers());
    assertThat(headers).containsEntry("Retry-After", "60").containsEntry("retry-after-ms", "60000")
        .containsEntry("RateLimit-Policy", "\"chat\";q=100;w=60");
    assertThat(headers.get("RateLimit")).doesNotContain("upstream");
    // another upstream-less policy is untouched
    assertThat(charge(gateway.context(-1, null), "solo", "sk-3", "claude").decision().allowed())
        .isTrue();
  }

  @Test
  void aProvidersRemainingZeroClosesTheUpstreamForEveryCallerUntilItsReset() throws Exception {
    RateLimitContext first = gateway.context(-1, null);
    charge(first, "chat", "sk-r1", null);
    assertThat(gateway.report(first, 200, provider("x-ratelimit-remaining-requests", "0",
        "x-ratelimit-reset-requests", "2s")::get)).isTrue();
    assertThat(gateway.report(first, 200, provider()::get)).as("once per call").isFalse();
    RateLimitOutcome other = denied("chat", "sk-r2", "gpt-4o");
    assertThat(other.decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
    assertThat(other.decision().retryAfterMs()).isEqualTo(2000);
    assertThat(store.upstreamStatus(OPENAI).closedForMs()).isEqualTo(2000);
    ticker.advance(Duration.ofSeconds(2));
    assertThat(gateway.chargeAsync(gateway.context(-1, null), "chat",
        RateLimitKey.of("sk-r2", null), 1).toCompletableFuture().get(10, TimeUnit.SECONDS)
        .decision().allowed()).isTrue();
    assertThat(reportedStatuses).containsExactly(200);
  }

  @Test
  void aProviders429ClosesTheUpstreamUntilItsRetryTime() throws Exception {
    RateLimitContext first = gateway.context(-1, null);
    charge(first, "chat", "sk-429", null);
    assertThat(gateway.reportAsync(first, 429, provider("retry-after", "5")::get)
        .toCompletableFuture().get(10, TimeUnit.SECONDS)).isTrue();
    assertThat(denied("chat", "sk-429b", null).decision().retryAfterMs()).isEqualTo(5000);
    assertThat(reportedStatuses).containsExactly(429);
  }

  @Test
  void theLimitersOwnHeadersOnTheResponseAreNotReadAsTheProviders() {
    RateLimitContext first = gateway.context(-1, null);
    RateLimitOutcome outcome = charge(first, "chat", "sk-own", null);
    Map<String, List<String>> written = new HashMap<>();
    for (ResponseHeader h : gateway.headers(outcome)) {
      written.computeIfAbsent(h.name().toLowerCase(java.util.Locale.ROOT), n -> new ArrayList<>())
          .add(h.value());
    }
    assertThat(written).containsKey("x-ratelimit-remaining-requests");
    // the provider added its own remaining count beside the limiter's
    written.get("x-ratelimit-remaining-requests").add("7");
    written.put("x-ratelimit-reset-requests",
        new ArrayList<>(List.of(written.get("x-ratelimit-reset-requests").get(0), "30s")));
    gateway.report(first, 200, written::get);
    UpstreamStatus status = store.upstreamStatus(OPENAI);
    assertThat(status.reportedRequestsRemaining()).as("the provider's 7, not the caller's 99")
        .isEqualTo(7);
  }

  @Test
  void theHookReportsByUpstreamName() {
    gateway.report("openai", 429, provider("retry-after-ms", "1500")::get);
    assertThat(store.upstreamStatus(OPENAI).closedForMs()).isEqualTo(1500);
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> gateway.report("nope", 200, provider()::get))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'nope'")
        .hasMessageContaining("[openai]");
  }

  @Test
  void aPolicyInShadowModeStillGetsItsUpstreamsDeny() {
    RateLimitOutcome own = charge(gateway.context(-1, null), "shadow", "sk-s", "gpt-4o");
    assertThat(own.wouldHaveDenied()).isFalse();
    RateLimitOutcome ownDeny = charge(gateway.context(-1, null), "shadow", "sk-s", "gpt-4o");
    assertThat(ownDeny.wouldHaveDenied()).as("its own level denies: shadow admits").isTrue();
    assertThat(store.upstreamStatus(OPENAI).requestsRemaining())
        .as("a call its levels denied is not counted on the upstream").isEqualTo(1);
    charge(gateway.context(-1, null), "chat", "sk-s2", null);
    RateLimitOutcome upstreamDeny = denied("shadow", "sk-s3", "gpt-4o");
    assertThat(upstreamDeny.decision().reason()).isEqualTo(Reason.UPSTREAM_LIMIT);
  }

  @Test
  void anEstimateAboveTheUpstreamsModelTokensIsFinalAndSaysSo() {
    RateLimitOutcome outcome = gateway.enforcer().acquire("chat", RateLimitKey.of("sk-big", null), 1,
        () -> 5000);
    assertThat(outcome.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    assertThat(outcome.decidingBudget()).isEqualTo(OPENAI.budget());
    RateLimitRejection r = gateway.reject(new RateLimitExceededException(outcome), null);
    assertThat(r.problem().detail()).contains("estimate of 5000 model tokens exceeds the model-token"
        + " limit of 1000");
    assertThat(windowUsed("chat", "sk-big")).isZero();
  }

  @Test
  void theEstimateIsAskedWhenOnlyTheUpstreamLimitsModelTokens() {
    RateLimitOutcome outcome = gateway.enforcer().acquire("chat", RateLimitKey.of("sk-t", null), 1,
        () -> 30);
    assertThat(outcome.reservation().estimate()).isEqualTo(30);
    assertThat(outcome.modelTokens()).as("settles the upstream's model tokens").isNotNull();
    assertThat(store.upstreamStatus(OPENAI).modelTokensRemaining()).isEqualTo(970);
    outcome.modelTokens().reconcile(10);
    assertThat(store.upstreamStatus(OPENAI).modelTokensRemaining()).isEqualTo(990);
  }
}
