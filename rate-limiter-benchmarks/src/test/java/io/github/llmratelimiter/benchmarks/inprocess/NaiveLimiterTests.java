package io.github.llmratelimiter.benchmarks.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class NaiveLimiterTests {

  @Test
  void windowAdmitsItsLimitPerKeyThenDenies() {
    NaiveLimiter limiter = new NaiveLimiter(3, Duration.ofHours(1), 100, 0);
    assertThat(limiter.allow("a")).isTrue();
    assertThat(limiter.allow("a")).isTrue();
    assertThat(limiter.allow("a")).isTrue();
    assertThat(limiter.allow("a")).isFalse();
    assertThat(limiter.allow("b")).isTrue();
  }

  @Test
  void bucketDeniesWhenEmpty() {
    NaiveLimiter limiter = new NaiveLimiter(100, Duration.ofHours(1), 2, 0);
    assertThat(limiter.allow("a")).isTrue();
    assertThat(limiter.allow("a")).isTrue();
    assertThat(limiter.allow("a")).isFalse();
    assertThat(limiter.allow("b")).isTrue();
  }
}
