package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The limiters' reserve-then-reconcile entry points for model tokens. */
class ModelTokenLimiterTests {

  private final ManualTicker ticker = new ManualTicker();

  @Test
  void gatewayReservesAnEstimateAndReconcilesTheUsage() {
    GatewayLimiter limiter = GatewayLimiter.builder()
        .requestsPerMinute(100)
        .modelTokensPerWindow(1000, Duration.ofMinutes(1))
        .ticker(ticker)
        .build();
    Reservation r = limiter.reserve("t", 1, 900);
    assertThat(r.decision().allowed()).isTrue();
    assertThat(limiter.reserve("t", 1, 200).decision().reason()).isEqualTo(Reason.TPM_LIMIT);
    limiter.reconcile(r, 150);
    assertThat(limiter.reserve("t", 1, 800).decision().allowed()).isTrue();
  }

  @Test
  void hierarchyReservesAtEveryLevel() {
    HierarchicalLimiter limiter = HierarchicalLimiter.builder()
        .level(new Budget("org", null, null, ModelTokenLimit.perMinute(1000)))
        .level(new Budget("key", null, null, ModelTokenLimit.perMinute(600)))
        .ticker(ticker)
        .build();
    Reservation a = limiter.reserve(List.of("acme", "k1"), 1, 600);
    Reservation b = limiter.reserve(List.of("acme", "k2"), 1, 400);
    assertThat(b.remainingModelTokens()).isZero();
    assertThat(limiter.reserve(List.of("acme", "k2"), 1, 1).decision().level()).isEqualTo("org");
    limiter.reconcile(a, 100);
    limiter.reconcile(b, 100);
    assertThat(limiter.reserve(List.of("acme", "k1"), 1, 500).remainingModelTokens()).isEqualTo(0);
  }
}
