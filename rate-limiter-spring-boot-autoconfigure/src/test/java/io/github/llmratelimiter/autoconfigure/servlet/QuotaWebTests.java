package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.QuotaThresholdCrossedEvent;
import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import java.time.Instant;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.ResultActions;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.WebApplicationContext;

/**
 * Quotas over Spring MVC on the in-memory store with a driven wall clock: a spent daily quota
 * answers 429 QUOTA_EXCEEDED until midnight, a cost quota is spent by the priced usage the
 * responses report, a policy in shadow mode never denies, and thresholds are published once each.
 */
@ExtendWith(OutputCaptureExtension.class)
class QuotaWebTests {

  private static final String KEY = "sk-quota-0123456789abcd";
  /** 2 hours and 500 ms before midnight UTC. */
  private static final Instant EVENING = Instant.parse("2026-03-10T21:59:59.500Z");
  /** A body the default estimator counts as 20 model tokens. */
  private static final String BODY =
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"abcdefgh\"}],\"max_tokens\":10}";

  private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
      .withConfiguration(TestGateway.MVC)
      .withUserConfiguration(QuotaGateway.class)
      .withPropertyValues(
          "ratelimiter.policies.daily.rpm.limit=1000",
          "ratelimiter.policies.daily.quotas.requests.unit=requests",
          "ratelimiter.policies.daily.quotas.requests.limit=3",
          "ratelimiter.policies.daily.quotas.requests.period=day",
          "ratelimiter.policies.spend.rpm.limit=1000",
          "ratelimiter.policies.spend.quotas.budget.unit=cost",
          "ratelimiter.policies.spend.quotas.budget.limit=0.001",
          "ratelimiter.policies.spend.quotas.budget.period=month",
          "ratelimiter.prices.default.input=1",
          "ratelimiter.prices.default.output=2",
          "ratelimiter.prices.default.cached-input=0.5",
          "ratelimiter.policies.shadow.enforce=false",
          "ratelimiter.policies.shadow.rpm.limit=2",
          "ratelimiter.policies.shadow.quotas.requests.unit=requests",
          "ratelimiter.policies.shadow.quotas.requests.limit=1",
          "ratelimiter.policies.shadow.quotas.requests.period=day",
          "ratelimiter.policies.soft.rpm.limit=1000",
          "ratelimiter.policies.soft.quotas.requests.unit=requests",
          "ratelimiter.policies.soft.quotas.requests.limit=4",
          "ratelimiter.policies.soft.quotas.requests.period=week",
          "ratelimiter.policies.soft.quotas.requests.thresholds=50,100",
          "ratelimiter.web.routes[0].include=/daily/**",
          "ratelimiter.web.routes[0].policy=daily",
          "ratelimiter.web.routes[1].include=/spend/**",
          "ratelimiter.web.routes[1].policy=spend",
          "ratelimiter.web.routes[2].include=/shadow/**",
          "ratelimiter.web.routes[2].policy=shadow",
          "ratelimiter.web.routes[3].include=/soft/**",
          "ratelimiter.web.routes[3].policy=soft");

  /** One test's view of the application. */
  private record Gateway(MockMvc mvc, WallClock clock, ManualTicker ticker, RateLimitStore store,
      RateLimitPolicies policies, List<QuotaThresholdCrossedEvent> events) {

    ResultActions call(String path) throws Exception {
      return mvc.perform(post(path).header("Authorization", "Bearer " + KEY)
          .contentType(MediaType.APPLICATION_JSON).content(BODY));
    }

    QuotaStatus quota(String policy) {
      Budget budget = policies.policy(policy).levels().get(0).budget();
      return store.administration().orElseThrow().quotas(budget, KEY).get(0);
    }
  }

  private interface GatewayTest {
    void run(Gateway gateway) throws Exception;
  }

  private void run(GatewayTest test) {
    runner.run(context -> {
      assertThat(context).hasNotFailed();
      WebApplicationContext web = (WebApplicationContext) context.getSourceApplicationContext();
      MockMvc mvc = MockMvcBuilders.webAppContextSetup(web)
          .addFilters(context.getBean(ModelPeekingFilter.class),
              context.getBean(ModelTokenUsageFilter.class))
          .build();
      test.run(new Gateway(mvc, context.getBean(WallClock.class), context.getBean(ManualTicker.class),
          context.getBean(RateLimitStore.class), context.getBean(RateLimitPolicies.class),
          context.getBean(Events.class).events));
    });
  }

  @Test
  void theFourthCallOfADailyQuotaOfThreeIsDeniedUntilMidnightUtc() {
    run(g -> {
      for (int i = 2; i >= 0; i--) {
        g.call("/daily/chat").andExpect(status().isOk())
            .andExpect(header().string("RateLimit-Policy",
                "\"daily\";q=1000;w=60, \"daily/requests\";q=3;w=86400"))
            .andExpect(header().string("RateLimit", "\"daily\";r=" + (997 + i)
                + ";t=60, \"daily/requests\";r=" + i + ";t=7201"));
      }
      g.call("/daily/chat").andExpect(status().isTooManyRequests())
          .andExpect(header().string("Retry-After", "7201"))
          .andExpect(header().string("retry-after-ms", "7200500"))
          .andExpect(header().string("RateLimit-Policy",
              "\"daily\";q=1000;w=60, \"daily/requests\";q=3;w=86400"))
          .andExpect(header().string("RateLimit",
              "\"daily/requests\";r=0;t=7201, \"daily\";r=997;t=60"))
          .andExpect(jsonPath("$.reason").value("QUOTA_EXCEEDED"))
          .andExpect(jsonPath("$.quota").value("requests"))
          .andExpect(jsonPath("$.unit").value("requests"))
          .andExpect(jsonPath("$.limit").value(3))
          .andExpect(jsonPath("$.used").value(3))
          .andExpect(jsonPath("$.periodEnd").value("2026-03-11T00:00:00Z"))
          .andExpect(jsonPath("$.retryAfterMs").value(7_200_500))
          .andExpect(jsonPath("$.error.type").value("insufficient_quota"))
          .andExpect(jsonPath("$.error.code").value("quota_exceeded"));
      assertThat(g.quota("daily").used()).isEqualTo(3);
      g.clock.set(Instant.parse("2026-03-11T00:00:00Z"));
      g.call("/daily/chat").andExpect(status().isOk());
      assertThat(g.quota("daily").used()).isEqualTo(1);
    });
  }

  @Test
  void aCostQuotaIsSpentByThePricedUsageTheResponsesReport() {
    run(g -> {
      // 100 uncached x 1 + 200 cached x 0.5 + 100 completion x 2 = 400 micro-units
      g.call("/spend/chat?prompt=300&cached=200&completion=100").andExpect(status().isOk());
      assertThat(g.quota("spend").used()).isEqualTo(400);
      // 300 x 1 + 100 x 2 = 500: 900 spent; the next estimate (20 tokens x 2 = 40) fits 100 left
      g.call("/spend/chat?prompt=300&cached=0&completion=100").andExpect(status().isOk());
      assertThat(g.quota("spend").used()).isEqualTo(900);
      // a failed call that reports no usage is refunded
      g.call("/spend/chat?prompt=-1&fail=true")
          .andExpect(status().isBadGateway());
      assertThat(g.quota("spend").used()).isEqualTo(900);
      // no usage reported: the estimate (40) stays
      g.call("/spend/chat?prompt=-1").andExpect(status().isOk());
      assertThat(g.quota("spend").used()).isEqualTo(940);
      g.call("/spend/chat?prompt=30&cached=0&completion=0").andExpect(status().isOk());
      assertThat(g.quota("spend").used()).isEqualTo(970);
      // 30 left, the estimate is 40: denied, nothing charged
      g.call("/spend/chat?prompt=1&cached=0&completion=0").andExpect(status().isTooManyRequests())
          .andExpect(jsonPath("$.reason").value("QUOTA_EXCEEDED"))
          .andExpect(jsonPath("$.unit").value("cost"))
          .andExpect(jsonPath("$.limit").value(1000))
          .andExpect(header().string("Retry-After", Long.toString(
              (Instant.parse("2026-04-01T00:00:00Z").toEpochMilli() - EVENING.toEpochMilli()
                  + 999) / 1000)));
      assertThat(g.quota("spend").used()).isEqualTo(970);
    });
  }

  /**
   * The shadow quota (limit 1) counts every call the window (2 a minute) admits, past its limit;
   * the calls the window denies are admitted too, and charge nothing (reserve-commit).
   */
  @Test
  void aPolicyInShadowModeNeverDeniesAndCountsTheCallsItsLimitsAdmit() {
    run(g -> {
      for (int i = 0; i < 5; i++) {
        g.call("/shadow/chat").andExpect(status().isOk())
            .andExpect(header().exists("RateLimit-Policy"))
            .andExpect(header().doesNotExist("Retry-After"));
      }
      QuotaStatus quota = g.quota("shadow");
      assertThat(quota.used()).isEqualTo(2);
      assertThat(quota.quota().enforce()).isFalse();
      g.ticker.advance(java.time.Duration.ofMinutes(1));
      g.call("/shadow/chat").andExpect(status().isOk());
      assertThat(g.quota("shadow").used()).isEqualTo(3);
    });
  }

  @Test
  void eachThresholdIsPublishedOnceWithTheKeyMasked(CapturedOutput output) {
    run(g -> {
      for (int i = 0; i < 4; i++) {
        g.call("/soft/chat").andExpect(status().isOk());
      }
      g.call("/soft/chat").andExpect(status().isTooManyRequests());
      g.call("/soft/chat").andExpect(status().isTooManyRequests());
      Instant monday = Instant.parse("2026-03-16T00:00:00Z");
      assertThat(g.events).extracting(QuotaThresholdCrossedEvent::threshold)
          .containsExactly(50, 100);
      QuotaThresholdCrossedEvent first = g.events.get(0);
      assertThat(first.maskedKey()).isEqualTo("****abcd");
      assertThat(first.policy()).isEqualTo("soft");
      assertThat(first.quota()).isEqualTo("requests");
      assertThat(first.unit()).isEqualTo(QuotaUnit.REQUESTS);
      assertThat(first.used()).isEqualTo(2);
      assertThat(first.limit()).isEqualTo(4);
      assertThat(first.periodEnd()).isEqualTo(monday);
      assertThat(g.events.get(1).used()).isEqualTo(4);
      assertThat(g.events.toString()).doesNotContain(KEY);
      // one WARN line per threshold, the key masked
      assertThat(output.getAll().lines().filter(l -> l.contains("WARN")
          && l.contains("Quota 'requests' of policy 'soft' reached"))).hasSize(2);
      assertThat(output.getAll()).contains("reached 50% for key ****abcd (2 requests of 4 requests")
          .doesNotContain(KEY);
    });
  }

  /** A wall clock the tests set. */
  static final class WallClock implements InstantSource {

    private final AtomicReference<Instant> now = new AtomicReference<>(EVENING);

    @Override
    public Instant instant() {
      return now.get();
    }

    void set(Instant instant) {
      now.set(instant);
    }
  }

  /** The threshold events published. */
  static final class Events {

    final List<QuotaThresholdCrossedEvent> events = new CopyOnWriteArrayList<>();

    @EventListener
    void on(QuotaThresholdCrossedEvent event) {
      events.add(event);
    }
  }

  /** The application: an upstream that reports the usage the test asks for. */
  @Configuration(proxyBeanMethods = false)
  static class QuotaGateway {

    @Bean
    ManualTicker ticker() {
      return new ManualTicker();
    }

    @Bean
    WallClock wallClock() {
      return new WallClock();
    }

    @Bean
    Events events() {
      return new Events();
    }

    @Bean
    RateLimitStore rateLimitStore(ManualTicker ticker, WallClock clock) {
      return RateLimitStore.inMemory(ticker, clock, 1000, task -> new CompletableFuture<>());
    }

    @Bean
    Upstream upstream() {
      return new Upstream();
    }
  }

  /** The handlers. */
  @RestController
  static class Upstream {

    @PostMapping(path = {"/daily/chat", "/spend/chat", "/shadow/chat", "/soft/chat"})
    public org.springframework.http.ResponseEntity<Map<String, Object>> chat(
        @RequestParam(defaultValue = "-1") long prompt,
        @RequestParam(defaultValue = "0") long cached,
        @RequestParam(defaultValue = "0") long completion,
        @RequestParam(defaultValue = "false") boolean fail) {
      Map<String, Object> reply = new LinkedHashMap<>();
      reply.put("object", "chat.completion");
      if (prompt >= 0) {
        reply.put("usage", Map.of("prompt_tokens", prompt, "completion_tokens", completion,
            "total_tokens", prompt + completion,
            "prompt_tokens_details", Map.of("cached_tokens", cached)));
      }
      return org.springframework.http.ResponseEntity.status(fail ? 502 : 200).body(reply);
    }
  }
}
