package io.github.llmratelimiter.autoconfigure.web;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RateLimitHeadersTests {

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
