package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Ticker;
import java.time.InstantSource;
import java.util.concurrent.CompletableFuture;

/** The header items on the in-memory store. */
class InMemoryHeaderItemsTests extends AbstractHeaderItemsTests {

  @Override
  protected RateLimitStore newStore(Ticker ticker, InstantSource clock) {
    return RateLimitStore.inMemory(ticker, clock, 1_000, task -> new CompletableFuture<Void>());
  }
}
