package io.github.llmratelimiter.benchmarks.report;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SuiteSelectionTests {

  @Test
  void onlySelectsLoadRunsByName() {
    assertThat(Suite.selected(Suite.PIPELINED, "")).isTrue();
    assertThat(Suite.selected(Suite.PIPELINED, "redis")).isTrue();
    assertThat(Suite.selected(Suite.HTTP, "redis")).isFalse();
    assertThat(Suite.selected(Suite.HTTP, "Http")).isTrue();
    assertThat(Suite.selected(Suite.HTTP, "GatewayLimiter")).isFalse();
    assertThat(Suite.selected(Suite.UPSTREAMS_PIPELINED, "Upstream")).isTrue();
    assertThat(Suite.selected(Suite.PIPELINED, "Upstream")).isFalse();
  }
}
