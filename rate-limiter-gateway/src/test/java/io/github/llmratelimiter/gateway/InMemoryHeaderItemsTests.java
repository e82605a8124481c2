package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.ManualClock;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import java.util.concurrent.CompletableFuture;

/** The header items on the in-memory store. */
class InMemoryHeaderItemsTests extends AbstractHeaderItemsTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker, ManualClock clock) {
    return RateLimitStore.inMemory(ticker, clock, 1_000, task -> new CompletableFuture<Void>());
  }
}
