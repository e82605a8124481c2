package io.github.llmratelimiter.core;

/** The in-memory store passes the store TCK. */
class InMemoryStoreTckTest extends RateLimitStoreTck {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker);
  }
}
