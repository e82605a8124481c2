package io.github.llmratelimiter.core;

import java.util.concurrent.CompletableFuture;

/** The in-memory store passes the components TCK. */
class InMemoryLevelRemainingTckTests extends AbstractLevelRemainingStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker, InMemoryStore.DEFAULT_MAX_KEYS,
        task -> new CompletableFuture<Void>());
  }
}
