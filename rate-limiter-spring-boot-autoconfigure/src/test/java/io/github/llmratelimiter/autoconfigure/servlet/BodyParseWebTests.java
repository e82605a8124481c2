package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.github.llmratelimiter.autoconfigure.TestGateway;
import io.github.llmratelimiter.autoconfigure.tokens.TokenGateway;
import io.github.llmratelimiter.gateway.JsonReader;
import io.github.llmratelimiter.gateway.ModelTokenEstimator;
import io.github.llmratelimiter.gateway.ModelUsage;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitGateway;
import io.github.llmratelimiter.gateway.internal.UsageScanner;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.test.context.assertj.AssertableWebApplicationContext;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;
import tools.jackson.databind.json.JsonMapper;

/**
 * The servlet front door checks a routed call with its route's policy: the request body is parsed
 * whole once when that policy estimates the call's model tokens, and only its members otherwise,
 * whatever another policy does.
 */
class BodyParseWebTests {

  private static final String KEY = "sk-parse-0123456789abcd";

  private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
      .withConfiguration(TestGateway.MVC)
      .withUserConfiguration(TokenGateway.class, CountingGateway.class)
      .withPropertyValues(TokenGateway.PROPERTIES)
      // another policy estimates: a call is read by its own route's policy, not by any policy
      .withPropertyValues("ratelimiter.policies.other.rpm.limit=1000",
          "ratelimiter.policies.other.tpm.limit=100");

  /** A JSON reader that counts the request bodies it parses, whole and by members. */
  static final class CountingJson implements JsonReader {

    private static final JsonMapper MAPPER = JsonMapper.builder().build();

    final AtomicInteger whole = new AtomicInteger();
    final AtomicInteger members = new AtomicInteger();

    @Override
    public @Nullable Map<String, Object> parseObject(byte[] json, int off, int len) {
      whole.incrementAndGet();
      return read(json, off, len);
    }

    @Override
    public @Nullable Map<String, Object> parseMembers(byte[] json, int off, int len) {
      members.incrementAndGet();
      return read(json, off, len);
    }

    /** A response's usage: read, not counted. */
    @Override
    public @Nullable ModelUsage modelUsage(byte[] json, int off, int len) {
      Map<String, Object> map = read(json, off, len);
      return map == null ? null : UsageScanner.modelUsage(map);
    }

    @Override
    public @Nullable Long usage(byte[] json, int off, int len) {
      ModelUsage u = modelUsage(json, off, len);
      return u == null ? null : u.totalTokens();
    }

    @SuppressWarnings("unchecked")
    private static @Nullable Map<String, Object> read(byte[] json, int off, int len) {
      try {
        return MAPPER.readValue(json, off, len, Map.class);
      } catch (RuntimeException notAnObject) {
        return null;
      }
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class CountingGateway {

    @Bean
    CountingJson countingJson() {
      return new CountingJson();
    }

    @Bean
    RateLimitGateway rateLimitGateway(RateLimitEnforcer enforcer, ModelTokenEstimator estimator,
        CountingJson json) {
      return RateLimitGateway.builder(enforcer, json).estimator(estimator).build();
    }
  }

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aRoutedCallIsParsedWholeOnceWhenItsPolicyEstimatesAndByItsMembersOtherwise(boolean tokens) {
    runner.withPropertyValues(tokens ? "ratelimiter.policies.llm.tpm.limit=100"
            : "ratelimiter.policies.llm.tpm.limit=")
        .run((AssertableWebApplicationContext context) -> {
          assertThat(context).hasNotFailed();
          MockMvc mvc = MockMvcBuilders
              .webAppContextSetup((WebApplicationContext) context.getSourceApplicationContext())
              .addFilters(context.getBean(ModelPeekingFilter.class),
                  context.getBean(ModelTokenUsageFilter.class))
              .build();
          CountingJson json = context.getBean(CountingJson.class);

          mvc.perform(post("/llm/chat").header("Authorization", "Bearer " + KEY)
                  .contentType(MediaType.APPLICATION_JSON).content(TokenGateway.BODY_OF_20))
              .andExpect(status().isOk());

          assertThat(context.getBean(RateLimitEnforcer.class).mayEstimate("llm")).isEqualTo(tokens);
          assertThat(json.whole).as("whole parses").hasValue(tokens ? 1 : 0);
          assertThat(json.members).as("members parses").hasValue(tokens ? 0 : 1);
        });
  }
}
