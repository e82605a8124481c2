package io.github.llmratelimiter.autoconfigure.endpoint;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPlanResolver;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;

/**
 * A real server with the application's own policies (whose budgets carry quotas) and an in-memory
 * store on a driven wall clock: {@code GET /actuator/ratelimiter/{key}} shows each quota of the
 * key's plan with used, limit, remaining, the period and its end, the shadow flag and cost as an
 * exact decimal; {@code GET /actuator/ratelimiter} lists each quota's top spenders, bounded like
 * {@code top}; no answer shows a key in clear.
 */
@SpringBootTest(classes = RateLimiterEndpointQuotaTests.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "management.endpoints.web.exposure.include=ratelimiter",
        "ratelimiter.endpoint.top=2",
        "ratelimiter.endpoint.max-top=3"})
@DirtiesContext
class RateLimiterEndpointQuotaTests {

  static final String ALICE = "sk-quota-alice-0000aaaa";
  static final String BOB = "sk-quota-bob-0000bbbb";
  static final String CAROL = "sk-quota-carol-0000cccc";
  static final String DAVE = "sk-quota-dave-0000dddd";

  /** Monday, 10 March 2025, 10:15:30 UTC. */
  static final Instant START = Instant.parse("2025-03-10T10:15:30Z");

  static final AtomicReference<Instant> NOW = new AtomicReference<>(START);

  static final QuotaLimit DAILY_REQUESTS = QuotaLimit.of("daily-requests", QuotaUnit.REQUESTS, 5,
      QuotaPeriod.DAY);
  static final QuotaLimit MONTHLY_COST = QuotaLimit.of("monthly-cost", QuotaUnit.COST, 50_000_000,
      QuotaPeriod.MONTH).withThresholds(50, 80);
  static final QuotaLimit DAILY_TOKENS = QuotaLimit.of("daily-tokens", QuotaUnit.TOKENS, 1000,
      QuotaPeriod.DAY).enforced(false);
  static final Budget CHAT = new Budget("chat", WindowLimit.perMinute(100), null, null, null,
      List.of(DAILY_REQUESTS, MONTHLY_COST, DAILY_TOKENS), null);

  @LocalServerPort
  int port;

  @Autowired
  RateLimitStore store;

  @Autowired
  RateLimitPolicies policies;

  @Autowired
  RateLimitPlanResolver plans;

  private final HttpClient http = HttpClient.newHttpClient();

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {

    @Bean
    RateLimitPolicies quotaPolicies() {
      return RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
          .policy("chat", KeyScope.API_KEY, CHAT)
          .defaultPolicy("chat")
          .plan("free")
          .plan("pro", "chat", CHAT.withQuotas(List.of(DAILY_REQUESTS.withLimit(50),
              MONTHLY_COST.withLimit(500_000_000), DAILY_TOKENS)), Map.of())
          .defaultPlan("free")
          .build();
    }

    @Bean
    RateLimitStore quotaStore() {
      InstantSource wallClock = NOW::get;
      return RateLimitStore.inMemory(new ManualTicker(), wallClock, 10_000,
          task -> new CompletableFuture<>());
    }
  }

  @BeforeEach
  void fresh() {
    store.administration().orElseThrow().resetAll();
    plans.assign(BOB, null);
    NOW.set(START);
  }

  /** Charges one call of a key under its plan's budgets. */
  private void charge(String apiKey, long tokens, long spend) {
    RateLimitPolicy chat = policies.policy("chat");
    RateLimitKey key = RateLimitKey.of(apiKey, null);
    Reservation r = store.reserve(chat.budgets(key, plans.plan(apiKey)), chat.keys(key), 1,
        new Consumption(1, tokens, spend), Composition.RESERVE_COMMIT);
    assertThat(r.decision().allowed()).as("the call of %s", apiKey).isTrue();
  }

  private String get(String path) throws Exception {
    HttpResponse<String> response = http.send(HttpRequest.newBuilder(
        URI.create("http://localhost:" + port + "/actuator/ratelimiter" + path))
        .timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(path).isEqualTo(200);
    String body = response.body();
    for (String key : List.of(ALICE, BOB, CAROL, DAVE)) {
      assertThat(body).as("no key in clear").doesNotContain(key)
          .doesNotContain(key.substring(0, key.length() - 4));
    }
    return body;
  }

  private static Object quota(String json, String name, String field) {
    List<Object> values = JsonPath.read(json, "$.quotas[?(@.quota=='" + name + "')]." + field);
    assertThat(values).as("%s of %s", field, name).hasSize(1);
    return values.get(0);
  }

  @Test
  void aKeysReportShowsEachQuotaOfItsPlanWithItsPeriodAndCostAsAnExactDecimal() throws Exception {
    // 3 calls of 100 tokens and 4.115226 each: 12.345678 in all
    for (int i = 0; i < 3; i++) {
      charge(ALICE, 100, 4_115_226);
    }
    String json = get("/" + ALICE);
    assertThat(JsonPath.<String>read(json, "$.key")).isEqualTo("****aaaa");
    assertThat(JsonPath.<List<Object>>read(json, "$.quotas")).hasSize(3);
    assertThat(JsonPath.<List<String>>read(json, "$.quotas[*].quota"))
        .containsExactly("daily-requests", "monthly-cost", "daily-tokens");
    assertThat(JsonPath.<List<String>>read(json, "$.quotas[*].policy")).containsOnly("chat");
    assertThat(JsonPath.<List<String>>read(json, "$.quotas[*].budget")).containsOnly("chat");

    assertThat(quota(json, "daily-requests", "unit")).isEqualTo("requests");
    assertThat(quota(json, "daily-requests", "used")).isEqualTo(3);
    assertThat(quota(json, "daily-requests", "limit")).isEqualTo(5);
    assertThat(quota(json, "daily-requests", "remaining")).isEqualTo(2);
    assertThat(quota(json, "daily-requests", "period")).isEqualTo("day");
    assertThat(quota(json, "daily-requests", "zone")).isEqualTo("Z");
    assertThat(quota(json, "daily-requests", "periodStart")).isEqualTo("2025-03-10T00:00:00Z");
    assertThat(quota(json, "daily-requests", "periodEnd")).isEqualTo("2025-03-11T00:00:00Z");
    assertThat(quota(json, "daily-requests", "enforce")).isEqualTo(true);
    assertThat(quota(json, "daily-requests", "exceeded")).isEqualTo(false);
    assertThat(quota(json, "daily-requests", "usedAmount")).isNull();

    assertThat(quota(json, "monthly-cost", "unit")).isEqualTo("cost");
    assertThat(quota(json, "monthly-cost", "used")).isEqualTo(12_345_678);
    assertThat(quota(json, "monthly-cost", "limit")).isEqualTo(50_000_000);
    assertThat(quota(json, "monthly-cost", "usedAmount")).isEqualTo("12.345678");
    assertThat(quota(json, "monthly-cost", "limitAmount")).isEqualTo("50.00");
    assertThat(quota(json, "monthly-cost", "remainingAmount")).isEqualTo("37.654322");
    assertThat(quota(json, "monthly-cost", "period")).isEqualTo("month");
    assertThat(quota(json, "monthly-cost", "periodStart")).isEqualTo("2025-03-01T00:00:00Z");
    assertThat(quota(json, "monthly-cost", "periodEnd")).isEqualTo("2025-04-01T00:00:00Z");
    assertThat(quota(json, "monthly-cost", "thresholds")).isEqualTo(List.of(50, 80));

    assertThat(quota(json, "daily-tokens", "unit")).isEqualTo("tokens");
    assertThat(quota(json, "daily-tokens", "used")).isEqualTo(300);
    assertThat(quota(json, "daily-tokens", "enforce")).isEqualTo(false);

    // the next day: the daily quotas reset, the monthly one holds
    NOW.set(Instant.parse("2025-03-11T00:00:00Z"));
    String next = get("/" + ALICE);
    assertThat(quota(next, "daily-requests", "used")).isEqualTo(0);
    assertThat(quota(next, "daily-requests", "remaining")).isEqualTo(5);
    assertThat(quota(next, "daily-requests", "periodEnd")).isEqualTo("2025-03-12T00:00:00Z");
    assertThat(quota(next, "monthly-cost", "usedAmount")).isEqualTo("12.345678");
  }

  @Test
  void aKeysReportCarriesItsPlansLimitsAndAShadowQuotaPastItsLimit() throws Exception {
    plans.assign(BOB, "pro");
    charge(BOB, 700, 1_000_000);
    charge(BOB, 700, 1_000_001);
    String json = get("/" + BOB);
    assertThat(JsonPath.<String>read(json, "$.plan")).isEqualTo("pro");
    assertThat(quota(json, "daily-requests", "limit")).isEqualTo(50);
    assertThat(quota(json, "monthly-cost", "limitAmount")).isEqualTo("500.00");
    assertThat(quota(json, "monthly-cost", "usedAmount")).isEqualTo("2.000001");
    assertThat(quota(json, "monthly-cost", "remainingAmount")).isEqualTo("497.999999");
    // the shadow quota admitted both calls, and says it is spent
    assertThat(quota(json, "daily-tokens", "used")).isEqualTo(1400);
    assertThat(quota(json, "daily-tokens", "remaining")).isEqualTo(0);
    assertThat(quota(json, "daily-tokens", "enforce")).isEqualTo(false);
    assertThat(quota(json, "daily-tokens", "exceeded")).isEqualTo(true);
  }

  @Test
  void aTopSpendersLimitIsThatOfItsPlan() throws Exception {
    plans.assign(BOB, "pro");
    charge(BOB, 10, 10_000_000);
    charge(BOB, 10, 10_000_000);
    charge(ALICE, 10, 12_345_678);
    String cost = "$.quotas[?(@.quota=='monthly-cost')]";
    String json = get("");
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].key")).containsExactly("****bbbb", "****aaaa");
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].plan")).containsExactly("pro", "free");
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].limitAmount"))
        .containsExactly("500.00", "50.00");
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].remainingAmount"))
        .containsExactly("480.00", "37.654322");
    assertThat(JsonPath.<List<Integer>>read(json, "$.quotas[?(@.quota=='daily-requests')].top[*].limit"))
        .containsExactly(50, 5);
  }

  @Test
  void theReportListsEachQuotasTopSpendersMostFirstBoundedLikeTop() throws Exception {
    for (int i = 0; i < 3; i++) {
      charge(ALICE, 10, 4_115_226);
    }
    charge(BOB, 10, 20_000_000);
    charge(CAROL, 10, 500_000);
    charge(CAROL, 10, 500_000);
    charge(DAVE, 10, 1);

    String json = get("?top=3");
    assertThat(JsonPath.<List<String>>read(json, "$.quotas[*].quota"))
        .containsExactly("daily-requests", "monthly-cost", "daily-tokens");
    String cost = "$.quotas[?(@.quota=='monthly-cost')]";
    assertThat(JsonPath.<List<String>>read(json, cost + ".unit")).containsExactly("cost");
    assertThat(JsonPath.<List<Integer>>read(json, cost + ".limit")).containsExactly(50_000_000);
    assertThat(JsonPath.<List<String>>read(json, cost + ".limitAmount")).containsExactly("50.00");
    assertThat(JsonPath.<List<String>>read(json, cost + ".periodEnd"))
        .containsExactly("2025-04-01T00:00:00Z");
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].key"))
        .containsExactly("****bbbb", "****aaaa", "****cccc");
    assertThat(JsonPath.<List<Integer>>read(json, cost + ".top[*].used"))
        .containsExactly(20_000_000, 12_345_678, 1_000_000);
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].usedAmount"))
        .containsExactly("20.00", "12.345678", "1.00");
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].plan"))
        .containsExactly("free", "free", "free");
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].limitAmount"))
        .containsExactly("50.00", "50.00", "50.00");
    assertThat(JsonPath.<List<Integer>>read(json, cost + ".top[*].remaining"))
        .containsExactly(30_000_000, 37_654_322, 49_000_000);
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].remainingAmount"))
        .containsExactly("30.00", "37.654322", "49.00");
    assertThat(JsonPath.<List<Boolean>>read(json, cost + ".top[*].enforce")).containsOnly(true);
    assertThat(JsonPath.<List<String>>read(json, cost + ".top[*].id")).doesNotContainNull();

    String requests = "$.quotas[?(@.quota=='daily-requests')]";
    assertThat(JsonPath.<List<Integer>>read(json, requests + ".top[*].used")).containsExactly(3, 2, 1);
    assertThat(JsonPath.<List<Object>>read(json, requests + ".top[*].usedAmount")).containsOnlyNulls();
    assertThat(JsonPath.<List<Boolean>>read(json, "$.quotas[?(@.quota=='daily-tokens')].enforce"))
        .containsExactly(false);

    // the default top (2), and at most max-top (3)
    assertThat(JsonPath.<List<String>>read(get(""), cost + ".top[*].key"))
        .containsExactly("****bbbb", "****aaaa");
    assertThat(JsonPath.<List<String>>read(get("?top=1"), cost + ".top[*].key"))
        .containsExactly("****bbbb");
    assertThat(JsonPath.<List<String>>read(get("?top=50"), cost + ".top[*].key")).hasSize(3);

    // a new day: no one spent of the daily quotas yet, the month's spenders stay
    NOW.set(Instant.parse("2025-03-11T00:00:01Z"));
    String tomorrow = get("?top=3");
    assertThat(JsonPath.<List<Object>>read(tomorrow, requests + ".top[*]")).isEmpty();
    assertThat(JsonPath.<List<Object>>read(tomorrow, requests + ".periodEnd")).containsOnlyNulls();
    assertThat(JsonPath.<List<Integer>>read(tomorrow, cost + ".top[*].used"))
        .containsExactly(20_000_000, 12_345_678, 1_000_000);
  }
}
