package io.github.llmratelimiter.benchmarks.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class LatenciesTests {

  @Test
  void percentilesAreNearestRankOverEveryPart() {
    long[] a = new long[60];
    long[] b = new long[40];
    for (int i = 0; i < 100; i++) {
      if (i % 5 < 3) {
        a[i / 5 * 3 + i % 5] = i + 1;
      } else {
        b[i / 5 * 2 + i % 5 - 3] = i + 1;
      }
    }
    Latencies l = Latencies.of(a, b);
    assertThat(l.count()).isEqualTo(100);
    assertThat(l.percentile(50)).isEqualTo(50);
    assertThat(l.percentile(99)).isEqualTo(99);
    assertThat(l.percentile(100)).isEqualTo(100);
    assertThat(Latencies.of(new long[] {7}).percentile(1)).isEqualTo(7);
    assertThat(Latencies.of().percentile(50)).isNaN();
    assertThatIllegalArgumentException().isThrownBy(() -> l.percentile(0))
        .withMessageContaining("percent").withMessageContaining("0.0");
  }

  @Test
  void aFailingCallFailsTheRun() {
    AtomicInteger calls = new AtomicInteger();
    org.assertj.core.api.Assertions.assertThatIllegalStateException()
        .isThrownBy(() -> ClosedLoopLoad.run(2, Duration.ZERO, Duration.ofSeconds(30), w -> {
          if (calls.incrementAndGet() == 100) {
            throw new IllegalStateException("wrong answer");
          }
        }, () -> {}, () -> {}))
        .withMessageContaining("wrong answer");
  }
}
