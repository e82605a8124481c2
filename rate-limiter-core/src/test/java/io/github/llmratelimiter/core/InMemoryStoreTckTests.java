package io.github.llmratelimiter.core;

import java.util.concurrent.CompletableFuture;

/**
 * The in-memory store passes the store TCK. Its maintenance runs only when a test asks for it
 * ({@link #runMaintenance}), so what a test sees never depends on when a background step ran.
 */
class InMemoryStoreTckTests extends AbstractRateLimitStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker, InMemoryStore.DEFAULT_MAX_KEYS,
        task -> new CompletableFuture<Void>());
  }

  /** Maintenance steps until every table's pass has ended (a few keys: one step each). */
  @Override
  protected void runMaintenance() {
    for (int i = 0; i < 3; i++) {
      ((InMemoryStore) store).cleanUp();
    }
  }
}
