package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RateLimitHeadersTests {

  private static final RateLimitKey KEY = RateLimitKey.of("sk-headers-0123456789", null);

  /** An allowed outcome on the default policy with the given window limit, 9 remaining. */
  private static RateLimitOutcome allowed(long limit) {
    RateLimitSettings settings = RateLimitSettings.defaults();
    RateLimitSettings limited = settings.withTopLevel(new PolicySettings(
        settings.topLevel().limits().withRpm(limit, Duration.ofMinutes(1)),
        KeyScope.API_KEY, java.util.Map.of(), null));
    RateLimitPolicy policy = RateLimitPolicies.from(limited).policy(null);
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
}
