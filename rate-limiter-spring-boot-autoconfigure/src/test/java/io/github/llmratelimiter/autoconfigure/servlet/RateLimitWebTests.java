package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.gateway.DefaultRateLimitProblemFactory;
import io.github.llmratelimiter.gateway.RateLimitProblemFactory;
import java.time.Duration;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

/** The HTTP behaviour: headers, exact 429 bodies, Retry-After, both enforcement paths, charged once. */
class RateLimitWebTests {

  private static final String KEY = "sk-test-0123456789abcd";

  private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
      .withConfiguration(TestGateway.MVC)
      .withUserConfiguration(TestGateway.class)
      .withPropertyValues(
          "ratelimiter.policies.routed.rpm.limit=3",
          "ratelimiter.policies.annotated.rpm.limit=2",
          "ratelimiter.policies.annotated.burst.capacity=10",
          "ratelimiter.policies.annotated.burst.refill-per-second=10",
          "ratelimiter.policies.per-key.rpm.limit=3",
          "ratelimiter.policies.chat.parent=per-key",
          "ratelimiter.policies.chat.scope=api-key-and-model",
          "ratelimiter.policies.chat.rpm.limit=10",
          "ratelimiter.policies.chat.models.gpt-4o.rpm.limit=1",
          "ratelimiter.web.routes[0].include=/v1/chat",
          "ratelimiter.web.routes[0].policy=chat",
          "ratelimiter.web.routes[1].include=/v1/**",
          "ratelimiter.web.routes[1].exclude=/v1/free",
          "ratelimiter.web.routes[1].policy=routed");

  private void withMvc(WebApplicationContextRunner r, Consumer<MockMvc> test) {
    r.run(context -> {
      assertThat(context).hasNotFailed();
      WebApplicationContext web = (WebApplicationContext) context.getSourceApplicationContext();
      MockMvc mvc = MockMvcBuilders.webAppContextSetup(web)
          .addFilters(context.getBean(ModelPeekingFilter.class))
          .build();
      test.accept(mvc);
    });
  }

  @Test
  void allowedResponsesCarryRateLimitHeaders() {
    withMvc(runner, mvc -> {
      try {
        mvc.perform(get("/v1/routed").header("Authorization", "Bearer " + KEY))
            .andExpect(status().isOk())
            .andExpect(header().string("RateLimit-Policy", "\"routed\";q=3;w=60"))
            .andExpect(header().string("RateLimit", "\"routed\";r=2;t=60"))
            .andExpect(header().string("x-ratelimit-limit-requests", "3"))
            .andExpect(header().string("x-ratelimit-remaining-requests", "2"))
            .andExpect(header().string("x-ratelimit-reset-requests", "1m0s"))
            .andExpect(header().doesNotExist("Retry-After"))
            .andExpect(header().doesNotExist("retry-after-ms"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void requestCrossingTheLimitGets429WithExactBodyAndHeaders() {
    withMvc(runner, mvc -> {
      try {
        for (int i = 2; i >= 0; i--) {
          mvc.perform(get("/v1/routed").header("X-API-Key", KEY))
              .andExpect(status().isOk())
              .andExpect(header().string("x-ratelimit-remaining-requests", Integer.toString(i)));
        }
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY))
            .andExpect(status().isTooManyRequests())
            .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
            .andExpect(header().string("Retry-After", "60"))
            .andExpect(header().string("retry-after-ms", "60000"))
            .andExpect(header().string("RateLimit-Policy", "\"routed\";q=3;w=60"))
            .andExpect(header().string("RateLimit", "\"routed\";r=0;t=60"))
            .andExpect(header().string("x-ratelimit-remaining-requests", "0"))
            .andExpect(content().json("""
                {"type":"urn:llmratelimiter:problem:rate-limited","title":"Too Many Requests",
                 "status":429,
                 "detail":"Rate limit exceeded for policy 'routed' (RPM_LIMIT on level 'routed'). Retry after 60000 ms.",
                 "instance":"/v1/routed","reason":"RPM_LIMIT","policy":"routed","level":"routed",
                 "retryable":true,"retryAfterMs":60000}
                """, org.springframework.test.json.JsonCompareMode.STRICT));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void retryAfterIsRoundedUpToWholeSecondsAndTheWaitClearsTheDeny() {
    withMvc(runner.withPropertyValues("ratelimiter.policies.routed.burst.capacity=1",
        "ratelimiter.policies.routed.burst.refill-per-second=4"), mvc -> {
      try {
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andExpect(status().isOk());
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY))
            .andExpect(status().isTooManyRequests())
            .andExpect(header().string("Retry-After", "1"))
            .andExpect(header().string("retry-after-ms", "250"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void denyThatWaitingCannotClearHasNoRetryAfterAndSaysSo() {
    withMvc(runner.withPropertyValues("ratelimiter.policies.routed.burst.capacity=1",
        "ratelimiter.policies.routed.burst.refill-per-second=0"), mvc -> {
      try {
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andExpect(status().isOk());
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY))
            .andExpect(status().isTooManyRequests())
            .andExpect(header().doesNotExist("Retry-After"))
            .andExpect(header().doesNotExist("retry-after-ms"))
            .andExpect(content().json("""
                {"status":429,"reason":"BURST_LIMIT","retryable":false,
                 "detail":"Rate limit exceeded for policy 'routed' (BURST_LIMIT on level 'routed'). Waiting will not clear this limit (the bucket does not refill): do not retry."}
                """))
            .andExpect(result -> assertThat(result.getResponse().getContentAsString())
                .doesNotContain("retryAfterMs"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void everyRetryableDenyHasRetryAfterOfAtLeastOneSecond() {
    withMvc(runner.withPropertyValues("ratelimiter.policies.routed.rpm.limit=1000",
        "ratelimiter.policies.routed.burst.capacity=3",
        "ratelimiter.policies.routed.burst.refill-per-second=1000"), mvc -> {
      try {
        int denies = 0;
        for (int i = 0; i < 20; i++) {
          var response = mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andReturn().getResponse();
          if (response.getStatus() == 429) {
            denies++;
            assertThat(Long.parseLong(response.getHeader("Retry-After"))).isGreaterThanOrEqualTo(1);
            assertThat(Long.parseLong(response.getHeader("retry-after-ms"))).isBetween(1L, 1000L);
          }
        }
        assertThat(denies).isEqualTo(17);
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void annotationLimitsAHandlerOutsideAnyRoute() {
    withMvc(runner, mvc -> {
      try {
        mvc.perform(get("/annotated").header("X-API-Key", KEY))
            .andExpect(status().isOk())
            .andExpect(header().string("RateLimit", "\"annotated\";r=1;t=60, \"annotated-burst\";r=9;t=1"));
        mvc.perform(get("/annotated").header("X-API-Key", KEY)).andExpect(status().isOk());
        mvc.perform(get("/annotated").header("X-API-Key", KEY))
            .andExpect(status().isTooManyRequests())
            .andExpect(header().string("Retry-After", "60"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void handlerMatchedByRouteAndAnnotationIsChargedOnce() {
    withMvc(runner, mvc -> {
      try {
        for (int i = 2; i >= 0; i--) {
          mvc.perform(get("/v1/both").header("X-API-Key", KEY))
              .andExpect(status().isOk())
              .andExpect(header().string("RateLimit", "\"routed\";r=" + i + ";t=60"));
        }
        mvc.perform(get("/v1/both").header("X-API-Key", KEY)).andExpect(status().isTooManyRequests());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void routeDefersToAnnotationPolicyOnAnnotatedHandler() {
    withMvc(runner.withPropertyValues("ratelimiter.web.routes[1].include=/**"), mvc -> {
      try {
        // /annotated is also under the catch-all route "routed" (3/min); its annotation (2/min) wins
        mvc.perform(get("/annotated").header("X-API-Key", KEY))
            .andExpect(header().string("RateLimit-Policy",
                "\"annotated\";q=2;w=60, \"annotated-burst\";q=10;w=1"));
        mvc.perform(get("/annotated").header("X-API-Key", KEY)).andExpect(status().isOk());
        mvc.perform(get("/annotated").header("X-API-Key", KEY)).andExpect(status().isTooManyRequests());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource({"sequential, 1", "reserve-commit, 2"})
  void hierarchyAndModelOverrideApplyToTheModelInTheJsonBody(String composition, int miniAllowed) {
    withMvc(runner.withPropertyValues("ratelimiter.composition=" + composition), mvc -> {
      try {
        mvc.perform(post("/v1/chat").header("X-API-Key", KEY)
                .contentType(MediaType.APPLICATION_JSON).content("{\"model\":\"gpt-4o\",\"messages\":[]}"))
            .andExpect(status().isOk())
            .andExpect(content().json("{\"echo\":\"gpt-4o\"}"))
            .andExpect(header().string("RateLimit-Policy",
                "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60"));
        mvc.perform(post("/v1/chat").header("X-API-Key", KEY)
                .contentType(MediaType.APPLICATION_JSON).content("{\"model\":\"gpt-4o\"}"))
            .andExpect(status().isTooManyRequests())
            .andExpect(content().json("{\"level\":\"chat/gpt-4o\",\"policy\":\"chat\"}"));
        // another model has its own budget, but the per-key level above is shared (3 per minute);
        // in sequential composition the gpt-4o deny above kept its per-key charge, in
        // reserve-commit it charged nothing
        for (int i = 0; i < miniAllowed; i++) {
          mvc.perform(post("/v1/chat").header("X-API-Key", KEY)
                  .contentType(MediaType.APPLICATION_JSON).content("{\"model\":\"gpt-4o-mini\"}"))
              .andExpect(status().isOk())
              .andExpect(content().json("{\"echo\":\"gpt-4o-mini\"}"));
        }
        mvc.perform(post("/v1/chat").header("X-API-Key", KEY)
                .contentType(MediaType.APPLICATION_JSON).content("{\"model\":\"gpt-4o-mini\"}"))
            .andExpect(status().isTooManyRequests())
            .andExpect(content().json("{\"level\":\"per-key\",\"reason\":\"RPM_LIMIT\"}"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void theJsonBodysModelWinsOverAModelQueryParameter() {
    withMvc(runner, mvc -> {
      try {
        // the handler serves the body's gpt-4o: a query naming another model must not pick the budget
        mvc.perform(post("/v1/chat?model=gpt-4o-mini").header("X-API-Key", KEY)
                .contentType(MediaType.APPLICATION_JSON).content("{\"model\":\"gpt-4o\"}"))
            .andExpect(status().isOk())
            .andExpect(content().json("{\"echo\":\"gpt-4o\"}"))
            .andExpect(header().string("RateLimit-Policy",
                "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60"));
        mvc.perform(post("/v1/chat?model=gpt-4o-mini").header("X-API-Key", KEY)
                .contentType(MediaType.APPLICATION_JSON).content("{\"model\":\"gpt-4o\"}"))
            .andExpect(status().isTooManyRequests())
            .andExpect(content().json("{\"level\":\"chat/gpt-4o\"}"));
        // a body that names no model lets the query parameter in
        mvc.perform(post("/v1/chat?model=gpt-4o").header("X-API-Key", "sk-other-0000000000000001")
                .contentType(MediaType.APPLICATION_JSON).content("{\"messages\":[]}"))
            .andExpect(status().isOk())
            .andExpect(header().string("RateLimit-Policy",
                "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void aResolverWithTheApplicationsKeyKeepsTheDefaultModelRule() {
    RateLimitKeyResolver resolver = RateLimitKeyResolver.apiKeyFrom(r -> r.getHeader("X-Tenant"));
    withMvc(runner.withBean(RateLimitKeyResolver.class, () -> resolver), mvc -> {
      try {
        // the application's key only: the other headers are not the limiter's to judge
        mvc.perform(post("/v1/chat?model=gpt-4o-mini").header("X-Tenant", "tenant-1")
                .header("X-API-Key", "sk-a-000000000000").header("Authorization", "Bearer sk-b-000000")
                .contentType(MediaType.APPLICATION_JSON).content("{\"model\":\"gpt-4o\"}"))
            .andExpect(status().isOk())
            .andExpect(header().string("RateLimit-Policy",
                "\"per-key\";q=3;w=60, \"chat/gpt-4o\";q=1;w=60"));
        mvc.perform(post("/v1/chat").header("X-API-Key", KEY)
                .contentType(MediaType.APPLICATION_JSON).content("{\"model\":\"gpt-4o\"}"))
            .andExpect(status().isUnauthorized());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void waitingTheAdvertisedTimeOnTheTickerClearsTheDeny() {
    runner.run(context -> {
      WebApplicationContext web = (WebApplicationContext) context.getSourceApplicationContext();
      MockMvc mvc = MockMvcBuilders.webAppContextSetup(web).build();
      for (int i = 0; i < 3; i++) {
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andExpect(status().isOk());
      }
      long retryMs = Long.parseLong(mvc.perform(get("/v1/routed").header("X-API-Key", KEY))
          .andExpect(status().isTooManyRequests()).andReturn().getResponse().getHeader("retry-after-ms"));
      context.getBean(ManualTicker.class).advance(Duration.ofMillis(retryMs - 1));
      mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andExpect(status().isTooManyRequests());
      context.getBean(ManualTicker.class).advance(Duration.ofMillis(1));
      mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andExpect(status().isOk());
    });
  }

  @Test
  void requestWithoutApiKeyGets401ProblemByDefault() {
    withMvc(runner, mvc -> {
      try {
        mvc.perform(get("/v1/routed"))
            .andExpect(status().isUnauthorized())
            .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
            .andExpect(header().string("WWW-Authenticate", "Bearer"))
            .andExpect(content().json("""
                {"title":"Unauthorized","status":401,"instance":"/v1/routed",
                 "detail":"The request carries no API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'."}
                """));
        mvc.perform(get("/v1/routed").header("Authorization", "Bearer   "))
            .andExpect(status().isUnauthorized());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void requestsWithoutApiKeyShareTheAnonymousBudgetWhenConfigured() {
    withMvc(runner.withPropertyValues("ratelimiter.missing-key=anonymous"), mvc -> {
      try {
        for (int i = 0; i < 3; i++) {
          mvc.perform(get("/v1/routed")).andExpect(status().isOk());
        }
        mvc.perform(get("/v1/routed")).andExpect(status().isTooManyRequests());
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andExpect(status().isOk());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void malformedCostGets400ProblemNotA500() {
    withMvc(runner, mvc -> {
      try {
        mvc.perform(get("/cost").param("tokens", "-1").header("X-API-Key", KEY))
            .andExpect(status().isBadRequest())
            .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
            .andExpect(content().json("{\"status\":400,\"title\":\"Bad Request\"}"));
        mvc.perform(get("/cost").param("tokens", "NaN").header("X-API-Key", KEY))
            .andExpect(status().isBadRequest());
        mvc.perform(get("/cost").param("tokens", "11").header("X-API-Key", KEY))
            .andExpect(status().isTooManyRequests())
            .andExpect(header().doesNotExist("Retry-After"))
            .andExpect(content().json("{\"reason\":\"COST_EXCEEDS_CAPACITY\",\"retryable\":false}"));
        mvc.perform(post("/v1/chat").header("X-API-Key", KEY)
                .contentType(MediaType.APPLICATION_JSON).content("{not json"))
            .andExpect(status().is4xxClientError());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void apiKeysNeverAppearInResponseHeadersOrBodies() {
    withMvc(runner, mvc -> {
      try {
        for (int i = 0; i < 4; i++) {
          var response = mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andReturn().getResponse();
          assertThat(response.getContentAsString()).doesNotContain(KEY);
          for (String name : response.getHeaderNames()) {
            assertThat(response.getHeaders(name)).noneMatch(v -> v.contains(KEY));
          }
        }
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void customProblemFactoryShapesTheBody() {
    withMvc(runner.withBean(RateLimitProblemFactory.class, () -> new DefaultRateLimitProblemFactory(
        java.net.URI.create("https://example.com/rate-limited")) {
      @Override
      public io.github.llmratelimiter.gateway.RateLimitProblem rateLimited(
          io.github.llmratelimiter.gateway.RateLimitOutcome outcome, String path) {
        return super.rateLimited(outcome, path)
            .with("error", java.util.Map.of("type", "rate_limit_exceeded"));
      }
    }), mvc -> {
      try {
        for (int i = 0; i < 3; i++) {
          mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andExpect(status().isOk());
        }
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY))
            .andExpect(status().isTooManyRequests())
            .andExpect(header().string("Retry-After", "60"))
            .andExpect(content().json("""
                {"type":"https://example.com/rate-limited","error":{"type":"rate_limit_exceeded"}}
                """));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void storeStateIsKeptPerApiKey() {
    runner.run(context -> {
      WebApplicationContext web = (WebApplicationContext) context.getSourceApplicationContext();
      MockMvc mvc = MockMvcBuilders.webAppContextSetup(web).build();
      mvc.perform(get("/v1/routed").header("X-API-Key", KEY)).andExpect(status().isOk());
      mvc.perform(get("/v1/routed").header("X-API-Key", "sk-other-key-000000")).andExpect(status().isOk());
      var policies = context.getBean(io.github.llmratelimiter.gateway.RateLimitPolicies.class);
      assertThat(context.getBean(RateLimitStore.class)
          .administration().orElseThrow()
              .trackedKeys(policies.policy("routed").levels().get(0).budget())).isEqualTo(2);
    });
  }

  @Test
  void storeFailureDeniesWith503ByDefaultOrPassesWhenConfiguredToAllow() {
    RateLimitStore broken = new FailingStore();
    withMvc(runner.withBean(RateLimitStore.class, () -> broken), mvc -> {
      try {
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY))
            .andExpect(status().isServiceUnavailable())
            .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
            .andExpect(content().json("{\"status\":503,\"policy\":\"routed\"}"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
    withMvc(runner.withBean(RateLimitStore.class, () -> broken)
        .withPropertyValues("ratelimiter.store-failure=allow"), mvc -> {
      try {
        mvc.perform(get("/v1/routed").header("X-API-Key", KEY))
            .andExpect(status().isOk())
            .andExpect(header().doesNotExist("RateLimit"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  /** A store whose backend is down: every decision fails (as a timed-out remote store would). */
  static final class FailingStore implements RateLimitStore {
    @Override
    public io.github.llmratelimiter.core.Decision acquire(java.util.List<io.github.llmratelimiter.core.Budget> levels,
        java.util.List<String> keys, double cost, io.github.llmratelimiter.core.Composition composition) {
      throw new IllegalStateException("store unreachable");
    }

    @Override
    public io.github.llmratelimiter.core.Reservation reserve(
        java.util.List<io.github.llmratelimiter.core.Budget> levels, java.util.List<String> keys,
        double cost, long estimatedModelTokens, io.github.llmratelimiter.core.Composition composition) {
      throw new IllegalStateException("store unreachable");
    }

    @Override
    public void reconcile(io.github.llmratelimiter.core.Reservation reservation, long actualModelTokens) {
      throw new IllegalStateException("store unreachable");
    }

    @Override
    public void chargeModelTokens(java.util.List<io.github.llmratelimiter.core.Budget> levels,
        java.util.List<String> keys, long modelTokens) {
      throw new IllegalStateException("store unreachable");
    }

    @Override
    public void release(io.github.llmratelimiter.core.Reservation reservation) {
      throw new IllegalStateException("store unreachable");
    }
  }
}
