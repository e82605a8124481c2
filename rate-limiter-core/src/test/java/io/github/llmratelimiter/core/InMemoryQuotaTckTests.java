package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The in-memory store passes the quota TCK, and bounds the quota counters it keeps. */
class InMemoryQuotaTckTests extends AbstractQuotaStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker, ManualClock clock) {
    return RateLimitStore.inMemory(ticker, clock, InMemoryStore.DEFAULT_MAX_KEYS,
        task -> new CompletableFuture<Void>());
  }

  /**
   * A store keeps at most 4 quota counters per key it may track per budget: past that a new key
   * is denied TRACKED_KEYS_LIMIT (retryable, nothing charged) while every key it counts keeps its
   * use, until periods long over are dropped.
   */
  @Test
  void newKeysAreRefusedOnceTheQuotaCountersAreFull() {
    RateLimitStore small = RateLimitStore.inMemory(ticker, clock, 1,
        task -> new CompletableFuture<Void>());
    Budget b = new Budget("chat", null, null, null, null,
        List.of(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 5, QuotaPeriod.DAY)), null);
    Consumption one = new Consumption(1, 0, 0);
    for (int k = 0; k < 4; k++) {
      assertThat(small.reserve(List.of(b), List.of("k" + k), 1, one, Composition.RESERVE_COMMIT)
          .decision().allowed()).isTrue();
    }
    Reservation refused =
        small.reserve(List.of(b), List.of("k4"), 1, one, Composition.RESERVE_COMMIT);
    assertThat(refused.decision().reason()).isEqualTo(Reason.TRACKED_KEYS_LIMIT);
    assertThat(refused.decision().retryable()).isTrue();
    assertThat(small.reserve(List.of(b), List.of("k0"), 1, one, Composition.SEQUENTIAL)
        .quotas().get(0).used()).isEqualTo(2);
    // two days on, the counters of the first day are dropped by the maintenance
    clock.advance(java.time.Duration.ofDays(2));
    ((InMemoryStore) small).cleanUp();
    assertThat(small.reserve(List.of(b), List.of("k4"), 1, one, Composition.RESERVE_COMMIT)
        .decision().allowed()).isTrue();
  }
}
