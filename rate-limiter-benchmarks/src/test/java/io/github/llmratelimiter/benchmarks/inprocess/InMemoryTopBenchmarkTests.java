package io.github.llmratelimiter.benchmarks.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The top benchmark outside JMH, on 5,000 keys: above the exact size, so ranked from candidates. */
class InMemoryTopBenchmarkTests {

  @Test
  void topCasesNameTheBusiestKeys() {
    InMemoryTopBenchmark b = new InMemoryTopBenchmark();
    b.keys = 5_000;
    b.setUp(); // returns once a maintenance pass has ranked the keys
    try {
      for (int i = 0; i < 10; i++) {
        assertThat(b.top1().get(0).key()).isEqualTo("busy-0");
        assertThat(b.top20()).hasSize(20);
      }
      assertThat(b.top20().subList(0, 5)).extracting(s -> s.key())
          .containsExactly("busy-0", "busy-1", "busy-2", "busy-3", "busy-4");
    } finally {
      b.tearDown();
    }
  }
}
