package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.Reconciliations;
import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.autoconfigure.tokens.TokenGateway;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.test.context.assertj.AssertableWebApplicationContext;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.ResultActions;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;

/**
 * Model-token (TPM) budgets over MockMvc, in both composition modes: the estimate reserved before
 * the call, reconciled down and up from the response's usage, the token headers, a TPM deny and
 * its retry, a never-fitting estimate, refunds of failed upstream calls, and the explicit handle.
 */
class ModelTokenWebTests {

  private static final String KEY = "sk-tokens-0123456789ab";

  private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
      .withConfiguration(TestGateway.MVC)
      .withUserConfiguration(TokenGateway.class)
      .withPropertyValues(TokenGateway.PROPERTIES);

  /** One test's view of the application. */
  private record Gateway(MockMvc mvc, RateLimitStore store, Budget budget, ManualTicker ticker,
      Reconciliations settled) {

    ResultActions chat(String query) throws Exception {
      return mvc.perform(request("/llm/chat" + query));
    }

    long modelTokensUsed() {
      return admin(store).inspect(budget, KEY).map(KeySnapshot::modelTokensUsed).orElse(0L);
    }

    long requestsCounted() {
      return admin(store).inspect(budget, KEY).map(KeySnapshot::windowUsed).orElse(0L);
    }
  }

  private static MockHttpServletRequestBuilder request(String path) {
    return post(path).header("Authorization", "Bearer " + KEY)
        .contentType(MediaType.APPLICATION_JSON).content(TokenGateway.BODY_OF_20);
  }

  private interface GatewayTest {
    void run(Gateway gateway) throws Exception;
  }

  private void run(String composition, GatewayTest test) {
    runner.withPropertyValues("ratelimiter.composition=" + composition)
        .run((AssertableWebApplicationContext context) -> {
          assertThat(context).hasNotFailed();
          WebApplicationContext web = (WebApplicationContext) context.getSourceApplicationContext();
          MockMvc mvc = MockMvcBuilders.webAppContextSetup(web)
              .addFilters(context.getBean(ModelPeekingFilter.class),
                  context.getBean(ModelTokenUsageFilter.class))
              .build();
          Budget budget = context.getBean(RateLimitPolicies.class).policy("llm")
              .budgets(RateLimitKey.of(KEY, null)).get(0);
          test.run(new Gateway(mvc, context.getBean(RateLimitStore.class), budget,
              context.getBean(ManualTicker.class), context.getBean(Reconciliations.class)));
        });
  }

  @ParameterizedTest
  @ValueSource(strings = {"sequential", "reserve-commit"})
  void estimateIsReservedThenReconciledDownAndUpFromTheResponseUsage(String composition) {
    run(composition, g -> {
      g.chat("?usage=12")
          .andExpect(status().isOk())
          // the headers count the call at its estimate of 20 model tokens
          .andExpect(header().string("RateLimit-Policy", "\"llm\";q=100000;w=60, \"llm-tokens\";q=100;qu=\"tokens\";w=60"))
          .andExpect(header().string("RateLimit", "\"llm\";r=99999;t=60, \"llm-tokens\";r=80;t=60"))
          .andExpect(header().string("x-ratelimit-limit-tokens", "100"))
          .andExpect(header().string("x-ratelimit-remaining-tokens", "80"))
          .andExpect(header().string("x-ratelimit-reset-tokens", "1m0s"))
          .andExpect(header().string("x-ratelimit-limit-requests", "100000"));
      assertThat(g.settled().next()).isEqualTo(new Reconciliations.Settled("llm", 20, 12));
      assertThat(g.modelTokensUsed()).isEqualTo(12); // reconciled down: 8 refunded

      g.chat("?usage=30")
          .andExpect(status().isOk())
          .andExpect(header().string("x-ratelimit-remaining-tokens", Long.toString(100 - 12 - 20)));
      assertThat(g.settled().next()).isEqualTo(new Reconciliations.Settled("llm", 20, 30));
      assertThat(g.modelTokensUsed()).isEqualTo(12 + 30); // reconciled up: 10 charged extra

      g.chat("").andExpect(status().isOk()); // no usage in the response: the estimate stays
      assertThat(g.settled().next()).isEqualTo(new Reconciliations.Settled("llm", 20, 20));
      assertThat(g.modelTokensUsed()).isEqualTo(12 + 30 + 20);
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"sequential", "reserve-commit"})
  void tpmDenyWaitsUntilEnoughTokensLeaveTheWindow(String composition) {
    run(composition, g -> {
      for (int i = 0; i < 5; i++) {
        g.chat("?usage=20").andExpect(status().isOk());
        g.ticker().advance(Duration.ofSeconds(1));
      }
      assertThat(g.modelTokensUsed()).isEqualTo(100);
      g.chat("?usage=20")
          .andExpect(status().isTooManyRequests())
          .andExpect(jsonPath("$.reason").value("TPM_LIMIT"))
          .andExpect(jsonPath("$.retryable").value(true))
          .andExpect(jsonPath("$.estimatedModelTokens").value(20))
          // the oldest entry (20 tokens, 5 s ago) leaves the 60 s window in 55 s: then 20 fit
          .andExpect(header().string("retry-after-ms", "55000"))
          .andExpect(header().string("Retry-After", "55"))
          .andExpect(header().string("x-ratelimit-remaining-tokens", "0"));
      // sequential: the TPM deny keeps the request-window slot it took; reserve-commit: nothing
      assertThat(g.requestsCounted()).isEqualTo(composition.equals("sequential") ? 6 : 5);
      assertThat(g.settled().pending()).isEqualTo(5);
      g.ticker().advance(Duration.ofSeconds(55));
      g.chat("?usage=20").andExpect(status().isOk());
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"sequential", "reserve-commit"})
  void anEstimateAboveTheWholeBudgetIsDeniedAsNeverFitting(String composition) {
    run(composition, g -> {
      g.mvc().perform(post("/llm/chat").header("Authorization", "Bearer " + KEY)
              .contentType(MediaType.APPLICATION_JSON)
              .content("{\"messages\":[{\"role\":\"user\",\"content\":\"abcdefgh\"}],\"max_tokens\":91}"))
          .andExpect(status().isTooManyRequests())
          .andExpect(jsonPath("$.reason").value("COST_EXCEEDS_CAPACITY"))
          .andExpect(jsonPath("$.retryable").value(false))
          .andExpect(jsonPath("$.estimatedModelTokens").value(101))
          .andExpect(jsonPath("$.detail").value(org.hamcrest.Matchers.containsString(
              "estimate of 101 model tokens exceeds the model-token limit of 100")))
          .andExpect(header().doesNotExist("Retry-After"))
          .andExpect(header().doesNotExist("retry-after-ms"))
          // refused before any state was read: no figure of the window's model tokens
          .andExpect(header().doesNotExist("RateLimit"))
          .andExpect(header().doesNotExist("x-ratelimit-remaining-tokens"));
      assertThat(g.requestsCounted()).isZero();
      assertThat(g.modelTokensUsed()).isZero();
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"sequential", "reserve-commit"})
  void aFailedUpstreamCallIsRefundedButKeepsItsRequestSlot(String composition) {
    run(composition, g -> {
      g.chat("?fail=status").andExpect(status().isBadGateway());
      assertThat(g.settled().next()).isEqualTo(new Reconciliations.Settled("llm", 20, 0));
      assertThatThrownBy(() -> g.chat("?fail=throw")).hasRootCauseMessage("upstream timed out");
      assertThat(g.settled().next()).isEqualTo(new Reconciliations.Settled("llm", 20, 0));
      assertThat(g.modelTokensUsed()).isZero();
      assertThat(g.requestsCounted()).isEqualTo(2);
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"sequential", "reserve-commit"})
  void gatewayCodeSettlesThroughTheHandleAndTheFilterLeavesItAlone(String composition) {
    run(composition, g -> {
      g.chat("?settle=7&usage=50").andExpect(status().isOk());
      assertThat(g.settled().next()).isEqualTo(new Reconciliations.Settled("llm", 20, 7));
      assertThat(g.settled().pending()).isZero();
      assertThat(g.modelTokensUsed()).isEqualTo(7);
    });
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
