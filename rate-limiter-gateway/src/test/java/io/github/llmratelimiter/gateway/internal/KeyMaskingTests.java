package io.github.llmratelimiter.gateway.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.RateLimitKey;
import org.junit.jupiter.api.Test;

class KeyMaskingTests {

  @Test
  void masksShowOnlyTheLastFourCharactersOfLongKeys() {
    assertThat(KeyMasking.mask("sk-live-secret-9f8e7d6c")).isEqualTo("****7d6c");
    assertThat(KeyMasking.mask("short-key01")).isEqualTo("****");
  }

  @Test
  void rateLimitKeyToStringMasksTheApiKey() {
    assertThat(RateLimitKey.of("sk-live-secret-9f8e7d6c", "gpt-4o").toString())
        .doesNotContain("secret").contains("****7d6c").contains("gpt-4o");
  }
}
