package io.github.llmratelimiter.core;

import java.util.concurrent.CompletableFuture;

/** The in-memory store passes the upstream order TCK (no background maintenance, as in the others). */
class InMemoryUpstreamOrderTckTests extends AbstractUpstreamOrderTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker, InMemoryStore.DEFAULT_MAX_KEYS,
        task -> new CompletableFuture<Void>());
  }
}
