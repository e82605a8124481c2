package io.github.llmratelimiter.core;

import java.util.concurrent.CompletableFuture;

/**
 * The in-memory store passes the plan-change TCK. No maintenance runs, as for {@link
 * InMemoryStoreTckTests}: a key a call left alone keeps its state however long it sits fresh.
 */
class InMemoryPlanChangeTckTests extends AbstractPlanChangeStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker, InMemoryStore.DEFAULT_MAX_KEYS,
        task -> new CompletableFuture<Void>());
  }
}
