package io.github.llmratelimiter.core;

import java.util.concurrent.CompletableFuture;

/** The in-memory store passes the quota TCK. */
class InMemoryQuotaTckTests extends AbstractQuotaStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker, ManualClock clock) {
    return RateLimitStore.inMemory(ticker, clock, InMemoryStore.DEFAULT_MAX_KEYS,
        task -> new CompletableFuture<Void>());
  }
}
