package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.diagnostics.FailureAnalyzer;

/** Spring Boot finds the failure analyzer that names an invalid property. */
class FailureAnalyzerRegistrationTests {

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
