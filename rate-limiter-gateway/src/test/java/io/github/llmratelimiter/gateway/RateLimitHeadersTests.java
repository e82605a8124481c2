package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RateLimitHeadersTests {

  private static final RateLimitKey KEY = RateLimitKey.of("sk-headers-0123456789", null);

  /** An allowed outcome on the default policy with the given window limit, 9 remaining. */
  private static RateLimitOutcome allowed(long limit) {
    RateLimitPolicy policy = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(limit), null))
        .build().policy(null);
    return new RateLimitOutcome(policy, KEY, Decision.allow(9, 60_000, "default"),
        policy.budgets(KEY), false);
  }

  @Test
  void headersFollowAPolicyWhoseLimitChangedUnderTheSameName() {
    List<ResponseHeader> before = RateLimitHeaders.of(allowed(10));
    List<ResponseHeader> after = RateLimitHeaders.of(allowed(20));

    assertThat(before).contains(new ResponseHeader(RateLimitHeaders.POLICY, "\"default\";q=10;w=60"),
        new ResponseHeader(RateLimitHeaders.LIMIT_REQUESTS, "10"));
    assertThat(after).contains(new ResponseHeader(RateLimitHeaders.POLICY, "\"default\";q=20;w=60"),
        new ResponseHeader(RateLimitHeaders.LIMIT_REQUESTS, "20"));
    assertThat(RateLimitHeaders.of(allowed(10))).isEqualTo(before);
  }

  @Test
  void headersThatDependOnlyOnTheLevelsAreFormattedOncePerListOfLevels() {
    List<Budget> levels = allowed(10).levels();

    RateLimitHeaders.Template template = RateLimitHeaders.template(levels);

    assertThat(RateLimitHeaders.template(new ArrayList<>(levels))).isSameAs(template);
    assertThat(RateLimitHeaders.template(allowed(11).levels())).isNotSameAs(template);
  }

  @Test
  void theCacheOfTemplatesStaysBounded() {
    for (int limit = 1; limit <= RateLimitHeaders.MAX_TEMPLATES * 2; limit++) {
      assertThat(RateLimitHeaders.of(allowed(limit)))
          .contains(new ResponseHeader(RateLimitHeaders.POLICY, "\"default\";q=" + limit + ";w=60"));
    }
    assertThat(RateLimitHeaders.templates()).isLessThanOrEqualTo(RateLimitHeaders.MAX_TEMPLATES);
  }

  @Test
  void everyItemThatDoesNotCountRequestsNamesItsUnit() {
    java.time.Instant now = java.time.Instant.parse("2027-03-27T12:00:00Z");
    RateLimitStore store = RateLimitStore.inMemory(new ManualTicker(), () -> now, 100,
        task -> new java.util.concurrent.CompletableFuture<>());
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("default", KeyScope.API_KEY, new Budget("units", WindowLimit.perMinute(60),
            new BucketLimit(5, 1), new ModelTokenLimit(500, Duration.ofMinutes(1)),
            ConcurrencyLimit.of(2), List.of(
                QuotaLimit.of("calls", QuotaUnit.REQUESTS, 1000, QuotaPeriod.DAY),
                QuotaLimit.of("tokens", QuotaUnit.TOKENS, 100000, QuotaPeriod.DAY),
                QuotaLimit.of("spend", QuotaUnit.COST, 4000, QuotaPeriod.DAY)),
            null))
        .build();
    RateLimitEnforcer enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY, List::of);
    try {
      RateLimitOutcome o = enforcer.acquire(null, KEY, 1, () -> 10);
      assertThat(o.decision().allowed()).isTrue();
      // the draft reads an item without qu in requests: model tokens, cost and calls in flight
      // must say what they count, or a client takes 500 model tokens for 500 calls
      assertThat(asMap(o).get(RateLimitHeaders.POLICY)).isEqualTo(
          "\"units\";q=60;w=60, \"units-burst\";q=5;w=5, "
              + "\"units-concurrency\";q=2;qu=\"concurrent-requests\", "
              + "\"units-tokens\";q=500;qu=\"tokens\";w=60, \"units/calls\";q=1000;w=86400, "
              + "\"units/tokens\";q=100000;qu=\"tokens\";w=86400, "
              + "\"units/spend\";q=4000;qu=\"cost-micros\";w=86400");
    } finally {
      store.close();
    }
  }

  @Test
  void aQuotasPeriodInThePolicyHeaderFollowsTheCalendarFromCallToCall() {
    java.time.ZoneId berlin = java.time.ZoneId.of("Europe/Berlin");
    java.time.Instant[] now = {java.time.Instant.parse("2027-03-27T12:00:00Z")};
    RateLimitStore store = RateLimitStore.inMemory(new ManualTicker(), () -> now[0], 100,
        task -> new java.util.concurrent.CompletableFuture<>());
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null,
            null, null, List.of(
                QuotaLimit.of("daily", QuotaUnit.REQUESTS, 1000, QuotaPeriod.DAY).inZone(berlin),
                QuotaLimit.of("monthly", QuotaUnit.REQUESTS, 1000, QuotaPeriod.MONTH).inZone(berlin)),
            null))
        .build();
    RateLimitEnforcer enforcer = new RateLimitEnforcer(store, policies, StoreFailure.DENY, List::of);
    // each call at noon UTC: a day of 24, 23 (clocks forward), 24, 25 (clocks back) hours; March
    // and October in Berlin an hour short and an hour long, February 28 days; the same levels
    // throughout, so the texts kept from the call before must not be reused
    String[][] calls = {
        {"2027-03-27T12:00:00Z", "86400", "2674800", "39600"},
        {"2027-03-28T12:00:00Z", "82800", "2674800", "36000"},
        {"2027-03-28T13:00:00Z", "82800", "2674800", "32400"},
        {"2027-02-15T12:00:00Z", "86400", "2419200", "39600"},
        {"2027-10-31T12:00:00Z", "90000", "2682000", "39600"},
        {"2027-03-27T12:00:00Z", "86400", "2674800", "39600"}};
    try {
      for (String[] call : calls) {
        now[0] = java.time.Instant.parse(call[0]);
        RateLimitOutcome o = enforcer.acquire(null, KEY, 1);
        assertThat(o.decision().allowed()).isTrue();
        Map<String, String> headers = asMap(o);
        assertThat(headers.get(RateLimitHeaders.POLICY)).as(call[0]).isEqualTo(
            "\"default\";q=60;w=60, \"default/daily\";q=1000;w=" + call[1]
                + ", \"default/monthly\";q=1000;w=" + call[2]);
        assertThat(headers.get(RateLimitHeaders.RATE_LIMIT)).as(call[0])
            .contains("\"default/daily\";r=" + (1000 - o.quotas().get(0).used()) + ";t=" + call[3]);
      }
      // within the same periods the next call's quota texts are the ones kept, not built again
      RateLimitOutcome o = enforcer.acquire(null, KEY, 1);
      RateLimitHeaders.Template t = RateLimitHeaders.template(o.levels());
      assertThat(t.quotaTexts(enforcer.acquire(null, KEY, 1).quotas()))
          .isSameAs(t.quotaTexts(o.quotas()));
    } finally {
      store.close();
    }
  }

  @ParameterizedTest
  @CsvSource({"0, 0s", "1, 1ms", "999, 999ms", "1000, 1s", "1001, 2s", "59999, 1m0s", "60000, 1m0s",
      "90000, 1m30s", "3600000, 1h0m0s", "3723001, 1h2m4s"})
  void resetIsFormattedLikeOpenAi(long ms, String expected) {
    assertThat(RateLimitHeaders.duration(ms)).isEqualTo(expected);
  }

  @ParameterizedTest
  @CsvSource({"0, 0", "1, 1", "300, 1", "1000, 1", "1001, 2", "60000, 60"})
  void secondsAreRoundedUp(long ms, long seconds) {
    assertThat(RateLimitHeaders.ceilSeconds(ms)).isEqualTo(seconds);
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {"chat|\"chat\"", "chat/gpt-4o|\"chat/gpt-4o\"",
      "a\"b|\"a\\\"b\"", "a\\b|\"a\\\\b\"", "modèle|\"mod?le\""})
  void policyNamesAreStructuredFieldStrings(String name, String expected) {
    assertThat(RateLimitHeaders.item(name)).isEqualTo(expected);
  }

  /** The set-up: 5 a minute and a bucket of 4 refilled at 0.1 a second, in {@code mode}. */
  private static RateLimitEnforcer fiveAMinuteBurstFour(ManualTicker ticker, Composition mode) {
    RateLimitPolicies policies = RateLimitPolicies.builder(mode).policy("default", KeyScope.API_KEY,
        new Budget("default", WindowLimit.perMinute(5), new BucketLimit(4, 0.1))).build();
    return new RateLimitEnforcer(RateLimitStore.inMemory(ticker), policies, StoreFailure.DENY,
        List::of);
  }

  private static Map<String, String> asMap(RateLimitOutcome outcome) {
    Map<String, String> map = new java.util.LinkedHashMap<>();
    RateLimitHeaders.write(outcome, map::put);
    StructuredFieldReader.check(map);
    return map;
  }

  private static final Pattern ITEM = Pattern.compile("(\"[^\"]+\");q=(\\d+)");
  private static final Pattern REMAINING = Pattern.compile("(\"[^\"]+\");r=(\\d+)");

  /**
   * Checks that {@code RateLimit} has one item per item of {@code RateLimit-Policy}, each with r
   * at most its q.
   */
  private static void assertRNeverExceedsItsQ(Map<String, String> headers) {
    Map<String, Long> quotas = new java.util.HashMap<>();
    Matcher m = ITEM.matcher(headers.get(RateLimitHeaders.POLICY));
    while (m.find()) {
      quotas.put(m.group(1), Long.parseLong(m.group(2)));
    }
    Map<String, Long> remaining = new java.util.HashMap<>();
    Matcher r = REMAINING.matcher(headers.get(RateLimitHeaders.RATE_LIMIT));
    while (r.find()) {
      remaining.put(r.group(1), Long.parseLong(r.group(2)));
    }
    assertThat(remaining.keySet()).as(headers.toString()).isEqualTo(quotas.keySet());
    remaining.forEach((item, left) ->
        assertThat(left).as(item + " in " + headers).isLessThanOrEqualTo(quotas.get(item)));
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(Composition.class)
  void theBurstIsAdvertisedAsItsOwnItemAndRNamesTheComponentThatLimits(Composition mode) {
    ManualTicker ticker = new ManualTicker();
    RateLimitEnforcer enforcer = fiveAMinuteBurstFour(ticker, mode);
    RateLimitKey key = RateLimitKey.of("sk-burst-0123456789", null);
    Map<String, String> first = asMap(enforcer.acquire(null, key, 1));
    assertThat(first).containsEntry(RateLimitHeaders.POLICY,
            "\"default\";q=5;w=60, \"default-burst\";q=4;w=40")
        // each item its own budget: 4 of 5 left in the window, 3 of 4 in the bucket (full again
        // in 10 s at 0.1 a second)
        .containsEntry(RateLimitHeaders.RATE_LIMIT, "\"default\";r=4;t=60, \"default-burst\";r=3;t=10")
        .containsEntry(RateLimitHeaders.REMAINING_REQUESTS, "4");
    for (int i = 0; i < 3; i++) {
      assertRNeverExceedsItsQ(asMap(enforcer.acquire(null, key, 1)));
    }
    RateLimitOutcome burst = enforcer.acquire(null, key, 1);
    assertThat(burst.decision().reason()).isEqualTo(Reason.BURST_LIMIT);
    Map<String, String> denied = asMap(burst);
    assertThat(denied.get(RateLimitHeaders.RATE_LIMIT)).startsWith("\"default-burst\";r=0;");
    assertThat(denied).containsEntry(RateLimitHeaders.RETRY_AFTER_MS, "10000")
        .containsEntry(RateLimitHeaders.RETRY_AFTER, "10");
    ticker.advanceMillis(10_000);
    RateLimitOutcome retry = enforcer.acquire(null, key, 1);
    assertRNeverExceedsItsQ(asMap(retry));
    if (mode == Composition.RESERVE_COMMIT) {
      assertThat(retry.decision().allowed()).isTrue();
      RateLimitOutcome rpm = enforcer.acquire(null, key, 1);
      assertThat(rpm.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(asMap(rpm).get(RateLimitHeaders.RATE_LIMIT)).startsWith("\"default\";r=0;");
      assertRNeverExceedsItsQ(asMap(rpm));
    } else {
      // sequential: the burst deny kept its window slot, so the window denies the retry
      assertThat(retry.decision().reason()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(asMap(retry).get(RateLimitHeaders.RATE_LIMIT)).startsWith("\"default\";r=0;");
    }
  }

  @Test
  void aBucketThatNeverRefillsHasNoWindowAndSlotsAreAdvertisedToo() {
    Budget oneShot = new Budget("one-shot", null, new io.github.llmratelimiter.core.BucketLimit(2.5, 0));
    Budget slots = new Budget("slots", io.github.llmratelimiter.core.WindowLimit.perMinute(10), null,
        null, ConcurrencyLimit.of(3));
    assertThat(RateLimitHeaders.template(List.of(oneShot)).policy)
        .isEqualTo("\"one-shot-burst\";q=2");
    assertThat(RateLimitHeaders.template(List.of(slots)).policy)
        .isEqualTo("\"slots\";q=10;w=60, \"slots-concurrency\";q=3;qu=\"concurrent-requests\"");
    RateLimitHeaders.Template t = RateLimitHeaders.template(List.of(oneShot, slots));
    assertThat(t.rateLimitItem(0, Reason.OK)).isEqualTo("\"one-shot-burst\"");
    assertThat(t.rateLimitItem(1, Reason.OK)).isEqualTo("\"slots\"");
    assertThat(t.rateLimitItem(1, Reason.CONCURRENCY_LIMIT)).isEqualTo("\"slots-concurrency\"");
    Budget onlySlots = new Budget("only-slots", null, null, null, ConcurrencyLimit.of(2));
    RateLimitHeaders.Template slotsOnly = RateLimitHeaders.template(List.of(onlySlots));
    assertThat(slotsOnly.policy).isEqualTo("\"only-slots-concurrency\";q=2;qu=\"concurrent-requests\"");
    assertThat(slotsOnly.rateLimitItem(0, Reason.OK)).as("an advertised item")
        .isEqualTo("\"only-slots-concurrency\"");
  }

  @Test
  void aCostNoBucketCanHoldTellsNoFigureOfALevelWhoseStateWasNotRead() {
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
        .policy("annotated", KeyScope.API_KEY,
            new Budget("annotated", WindowLimit.perMinute(2), new BucketLimit(10, 10)))
        .defaultPolicy("annotated").build();
    RateLimitEnforcer enforcer = new RateLimitEnforcer(RateLimitStore.inMemory(new ManualTicker()),
        policies, StoreFailure.DENY, List::of);
    RateLimitKey key = RateLimitKey.of("sk-too-big-0123456789", null);
    RateLimitOutcome tooBig = enforcer.acquire(null, key, 11);
    assertThat(tooBig.decision().reason()).isEqualTo(Reason.COST_EXCEEDS_CAPACITY);
    // the window has both its calls left and the bucket is full: "r=0" would be false of either
    assertThat(asMap(tooBig)).containsExactly(Map.entry(RateLimitHeaders.POLICY,
        "\"annotated\";q=2;w=60, \"annotated-burst\";q=10;w=1"));
    assertThat(asMap(enforcer.acquire(null, key, 1))).containsEntry(RateLimitHeaders.RATE_LIMIT,
        "\"annotated\";r=1;t=60, \"annotated-burst\";r=9;t=1");
  }

  @Test
  void aLevelWithABucketAndNoWindowReportsItsBucketAsItsRequests() {
    Budget oneShot = new Budget("one-shot", null, new BucketLimit(2.5, 0));
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("one-shot", KeyScope.API_KEY, oneShot).defaultPolicy("one-shot").build();
    RateLimitEnforcer enforcer = new RateLimitEnforcer(RateLimitStore.inMemory(new ManualTicker()),
        policies, StoreFailure.DENY, List::of);
    RateLimitKey key = RateLimitKey.of("sk-one-shot-0123456789", null);
    // 1.5 tokens left pay for 1 whole call; a bucket that never refills has no t
    assertThat(asMap(enforcer.acquire(null, key, 1))).containsExactly(
        Map.entry(RateLimitHeaders.POLICY, "\"one-shot-burst\";q=2"),
        Map.entry(RateLimitHeaders.RATE_LIMIT, "\"one-shot-burst\";r=1"),
        Map.entry(RateLimitHeaders.LIMIT_REQUESTS, "2"),
        Map.entry(RateLimitHeaders.REMAINING_REQUESTS, "1"),
        Map.entry(RateLimitHeaders.RESET_REQUESTS, "0s"));
    enforcer.acquire(null, key, 1);
    RateLimitOutcome denied = enforcer.acquire(null, key, 1);
    assertThat(denied.decision().reason()).isEqualTo(Reason.BURST_LIMIT);
    assertThat(asMap(denied)).containsEntry(RateLimitHeaders.RATE_LIMIT, "\"one-shot-burst\";r=0")
        .containsEntry(RateLimitHeaders.REMAINING_REQUESTS, "0")
        .doesNotContainKey(RateLimitHeaders.RETRY_AFTER);
  }

  @Test
  void aLevelWithOnlySlotsHasNoRequestHeaders() {
    Budget onlySlots = new Budget("only-slots", null, null, null, ConcurrencyLimit.of(2));
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("only-slots", KeyScope.API_KEY, onlySlots).defaultPolicy("only-slots").build();
    RateLimitEnforcer enforcer = new RateLimitEnforcer(RateLimitStore.inMemory(new ManualTicker()),
        policies, StoreFailure.DENY, List::of);
    RateLimitKey key = RateLimitKey.of("sk-only-slots-0123456789", null);
    assertThat(asMap(enforcer.acquire(null, key, 1))).containsExactly(
        Map.entry(RateLimitHeaders.POLICY, "\"only-slots-concurrency\";q=2;qu=\"concurrent-requests\""),
        Map.entry(RateLimitHeaders.RATE_LIMIT, "\"only-slots-concurrency\";r=1"));
  }
}
