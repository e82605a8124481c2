package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The rate-limit headers tell each budget's own standing, item by item, in every state of a call:
 * the first call on fresh budgets, calls in flight holding slots, a bucket, a model-token window
 * or a quota short of room, and a deny by each component (window, bucket, slots, model tokens,
 * quota), on a store a subclass provides. Every {@code r} is checked against the budget its item
 * names, never the smallest over several. Two levels: {@code per-key} (10 a minute, a daily quota
 * of 4 requests) above {@code chat} per key and model (3 a minute, a bucket of 5 refilled at 1 a
 * second, 2 calls in flight, 500 model tokens a minute), in sequential composition.
 */
public abstract class AbstractHeaderItemsTests {

  private static final AtomicLong KEYS = new AtomicLong();
  /** Noon UTC: the daily quota's period ends in 43,200 s. */
  private static final Instant NOON = Instant.parse("2026-01-01T12:00:00Z");
  private static final String POLICY = "\"per-key\";q=10;w=60, \"chat\";q=3;w=60, "
      + "\"chat-burst\";q=5;w=5, \"chat-concurrency\";q=2;qu=\"concurrent-requests\", \"chat-tokens\";q=500;qu=\"tokens\";w=60, "
      + "\"per-key/daily\";q=4;w=86400";

  /** Time stands still: every figure below is exact. */
  private final Ticker ticker = () -> 7_000_000_000L;
  private final InstantSource clock = InstantSource.fixed(NOON);
  private RateLimitStore store;
  private RateLimitEnforcer enforcer;

  /**
   * Returns a new store on these clocks.
   *
   * @param ticker the time of windows, buckets and leases (a test's, standing still)
   * @param clock the calendar of quotas (a test's, at noon UTC)
   * @return the store
   */
  protected abstract RateLimitStore newStore(Ticker ticker, InstantSource clock);

  @BeforeEach
  void start() {
    store = newStore(ticker, clock);
    Budget perKey = new Budget("per-key", WindowLimit.perMinute(10), null, null, null,
        List.of(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 4, QuotaPeriod.DAY)), null);
    Budget chat = new Budget("chat", WindowLimit.perMinute(3), new BucketLimit(5, 1),
        new ModelTokenLimit(500, Duration.ofMinutes(1)), ConcurrencyLimit.of(2));
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("per-key", KeyScope.API_KEY, perKey)
        .policy("chat", KeyScope.API_KEY_AND_MODEL, chat, Map.of(), "per-key")
        .defaultPolicy("chat")
        .build();
    enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY, List::of);
  }

  @AfterEach
  void stop() {
    store.close();
  }

  private static String newKey() {
    return "sk-items-" + KEYS.incrementAndGet() + "-" + System.nanoTime();
  }

  /** One call of {@code cost} on {@code model}, estimated at {@code tokens} model tokens. */
  private RateLimitOutcome call(String key, String model, double cost, long tokens) {
    return enforcer.acquire(null, RateLimitKey.of(key, model), cost, () -> tokens);
  }

  /** The call, then its slot given back (its response ended). */
  private RateLimitOutcome ended(String key, String model, double cost, long tokens) {
    RateLimitOutcome o = call(key, model, cost, tokens);
    assertThat(o.decision().allowed()).as("%s", o.decision()).isTrue();
    o.slots().release();
    return o;
  }

  private static Map<String, String> headers(RateLimitOutcome outcome) {
    Map<String, String> map = new LinkedHashMap<>();
    RateLimitHeaders.write(outcome, map::put);
    StructuredFieldReader.check(map); // every response's headers, as a client reads them
    return map;
  }

  @Test
  void theFirstCallThenCallsInFlightThenADenyByTheSlots() {
    String key = newKey();
    RateLimitOutcome first = call(key, "m", 1, 100);
    // one of 3 used: 2 left in the window, though the call holds 1 of its 2 slots
    assertThat(headers(first)).containsExactly(
        Map.entry("RateLimit-Policy", POLICY),
        Map.entry("RateLimit", "\"per-key\";r=9;t=60, \"chat\";r=2;t=60, \"chat-burst\";r=4;t=1, "
            + "\"chat-concurrency\";r=1, \"chat-tokens\";r=400;t=60, \"per-key/daily\";r=3;t=43200"),
        Map.entry("x-ratelimit-limit-requests", "3"),
        Map.entry("x-ratelimit-remaining-requests", "2"),
        Map.entry("x-ratelimit-reset-requests", "1m0s"),
        Map.entry("x-ratelimit-limit-tokens", "500"),
        Map.entry("x-ratelimit-remaining-tokens", "400"),
        Map.entry("x-ratelimit-reset-tokens", "1m0s"));
    assertThat(first.decision().remaining()).as("the API's figure: the smallest component").isEqualTo(1);

    RateLimitOutcome second = call(key, "m", 1, 100);
    assertThat(headers(second)).containsEntry("RateLimit", "\"per-key\";r=8;t=60, \"chat\";r=1;t=60, "
            + "\"chat-burst\";r=3;t=2, \"chat-concurrency\";r=0, \"chat-tokens\";r=300;t=60, "
            + "\"per-key/daily\";r=2;t=43200")
        .containsEntry("x-ratelimit-remaining-requests", "1")
        .containsEntry("x-ratelimit-remaining-tokens", "300");

    RateLimitOutcome third = call(key, "m", 1, 100);
    assertThat(third.decision().reason()).isEqualTo(Reason.CONCURRENCY_LIMIT);
    // the slots item first, r=0; per-key ran before chat denied (sequential), and stays charged
    assertThat(headers(third)).containsEntry("RateLimit", "\"chat-concurrency\";r=0, "
            + "\"per-key\";r=7;t=60, \"chat\";r=1;t=60, \"chat-burst\";r=3;t=2, "
            + "\"chat-tokens\";r=300;t=60, \"per-key/daily\";r=1;t=43200")
        .containsEntry("x-ratelimit-limit-requests", "3")
        .containsEntry("x-ratelimit-remaining-requests", "1")
        .containsEntry("Retry-After", "600")
        .containsEntry("retry-after-ms", "600000");

    first.slots().release();
    RateLimitOutcome freed = call(key, "m", 1, 100);
    assertThat(freed.decision().allowed()).isTrue();
    assertThat(headers(freed).get("RateLimit")).contains("\"chat\";r=0;t=60",
        "\"chat-concurrency\";r=0", "\"per-key/daily\";r=0;t=43200");
  }

  @Test
  void aDenyByTheWindowNamesTheWindowFirst() {
    String key = newKey();
    for (int i = 0; i < 3; i++) {
      ended(key, "m", 1, 100);
    }
    RateLimitOutcome denied = call(key, "m", 1, 100);
    assertThat(denied.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
    assertThat(headers(denied)).containsEntry("RateLimit", "\"chat\";r=0;t=60, "
            + "\"per-key\";r=6;t=60, \"chat-burst\";r=2;t=3, \"chat-concurrency\";r=2, "
            + "\"chat-tokens\";r=200;t=60, \"per-key/daily\";r=0;t=43200")
        .containsEntry("x-ratelimit-limit-requests", "3")
        .containsEntry("x-ratelimit-remaining-requests", "0")
        .containsEntry("x-ratelimit-reset-requests", "1m0s")
        .containsEntry("x-ratelimit-remaining-tokens", "200")
        .containsEntry("Retry-After", "60");
  }

  @Test
  void aBucketShortThenADenyByTheBucketNamesTheBurstFirst() {
    String key = newKey();
    RateLimitOutcome heavy = ended(key, "m", 3, 100);
    assertThat(headers(heavy)).containsEntry("RateLimit", "\"per-key\";r=9;t=60, "
        + "\"chat\";r=2;t=60, \"chat-burst\";r=2;t=3, \"chat-concurrency\";r=1, "
        + "\"chat-tokens\";r=400;t=60, \"per-key/daily\";r=3;t=43200");
    RateLimitOutcome denied = call(key, "m", 3, 100);
    assertThat(denied.decision().reason()).isEqualTo(Reason.BURST_LIMIT);
    // sequential: the window admitted the call before the bucket denied it, and stays charged
    assertThat(headers(denied)).containsEntry("RateLimit", "\"chat-burst\";r=2;t=3, "
            + "\"per-key\";r=8;t=60, \"chat\";r=1;t=60, \"chat-concurrency\";r=2, "
            + "\"chat-tokens\";r=400;t=60, \"per-key/daily\";r=2;t=43200")
        .containsEntry("x-ratelimit-remaining-requests", "1")
        .containsEntry("retry-after-ms", "1000")
        .containsEntry("Retry-After", "1");
  }

  @Test
  void modelTokensShortThenADenyByTheModelTokensNamesTheTokensFirst() {
    String key = newKey();
    RateLimitOutcome large = ended(key, "m", 1, 450);
    assertThat(headers(large)).containsEntry("x-ratelimit-remaining-tokens", "50")
        .containsEntry("x-ratelimit-remaining-requests", "2")
        .containsEntry("RateLimit", "\"per-key\";r=9;t=60, \"chat\";r=2;t=60, "
            + "\"chat-burst\";r=4;t=1, \"chat-concurrency\";r=1, \"chat-tokens\";r=50;t=60, "
            + "\"per-key/daily\";r=3;t=43200");
    RateLimitOutcome denied = call(key, "m", 1, 100);
    assertThat(denied.decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    assertThat(headers(denied)).containsEntry("RateLimit", "\"chat-tokens\";r=50;t=60, "
            + "\"per-key\";r=8;t=60, \"chat\";r=1;t=60, \"chat-burst\";r=3;t=2, "
            + "\"chat-concurrency\";r=2, \"per-key/daily\";r=2;t=43200")
        .containsEntry("x-ratelimit-limit-tokens", "500")
        .containsEntry("x-ratelimit-remaining-tokens", "50")
        .containsEntry("x-ratelimit-remaining-requests", "1")
        .containsEntry("Retry-After", "60");
  }

  @Test
  void aDenyByAQuotaNamesTheQuotaFirst() {
    String key = newKey();
    for (int i = 0; i < 3; i++) {
      ended(key, "a", 1, 100);
    }
    ended(key, "b", 1, 100);
    RateLimitOutcome denied = call(key, "b", 1, 100);
    assertThat(denied.decision().reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    // per-key denied: chat (model b) was never reached and reads as it stands
    assertThat(headers(denied)).containsEntry("RateLimit", "\"per-key/daily\";r=0;t=43200, "
            + "\"per-key\";r=5;t=60, \"chat\";r=2;t=60, \"chat-burst\";r=4;t=1, "
            + "\"chat-concurrency\";r=2, \"chat-tokens\";r=400;t=60")
        .containsEntry("x-ratelimit-limit-requests", "10")
        .containsEntry("x-ratelimit-remaining-requests", "5")
        .containsEntry("Retry-After", "43200");
  }
}
