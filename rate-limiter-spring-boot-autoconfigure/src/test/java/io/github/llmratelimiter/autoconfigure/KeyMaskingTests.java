package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.diagnostics.FailureAnalyzer;

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

  @Test
  void failureAnalyzerIsRegistered() throws java.io.IOException {
    boolean registered = false;
    var resources = getClass().getClassLoader().getResources("META-INF/spring.factories");
    while (resources.hasMoreElements()) {
      var props = new java.util.Properties();
      try (var in = resources.nextElement().openStream()) {
        props.load(in);
      }
      String analyzers = props.getProperty(FailureAnalyzer.class.getName(), "");
      registered |= List.of(analyzers.split(",")).contains(RateLimiterFailureAnalyzer.class.getName());
    }
    assertThat(registered).isTrue();
  }
}
