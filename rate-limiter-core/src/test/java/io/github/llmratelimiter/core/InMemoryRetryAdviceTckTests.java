package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The in-memory store passes the retry-advice TCK; and its own deny, {@link
 * Reason#TRACKED_KEYS_LIMIT}, advises a hint, not a promise: a new key is admitted once a tracked
 * key has become fresh, which the advised second does not bring about while the tracked keys stay
 * busy.
 */
class InMemoryRetryAdviceTckTests extends AbstractRetryAdviceStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker, 2, task -> new CompletableFuture<Void>());
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void aTrackedKeysDenyIsAHintThatClearsOnceATrackedKeyIsFresh(Composition mode) {
    Budget b = new Budget("cap2", WindowLimit.perMinute(10), null);
    assertThat(store.acquire(b, "a", 1, mode).allowed()).isTrue();
    ticker.advanceMillis(20_000);
    assertThat(store.acquire(b, "b", 1, mode).allowed()).isTrue();
    Decision full = store.acquire(b, "c", 1, mode);
    assertThat(full.reason()).isEqualTo(Reason.TRACKED_KEYS_LIMIT);
    assertThat(full.retryable()).isTrue();
    assertThat(full.retryAfterMs()).isEqualTo(1_000);
    ticker.advanceMillis(full.retryAfterMs());
    assertThat(store.acquire(b, "c", 1, mode).reason())
        .as("both tracked keys still have calls in their windows").isEqualTo(Reason.TRACKED_KEYS_LIMIT);
    ticker.advance(Duration.ofSeconds(39)); // t0 + 60 s: "a" is fresh, and the call drops it
    assertThat(store.acquire(b, "c", 1, mode).allowed()).isTrue();
  }
}
