package io.github.llmratelimiter.core;

/** The in-memory store passes the model-token TCK. */
class InMemoryModelTokenTckTests extends AbstractModelTokenStoreTests {

  @Override
  protected RateLimitStore newStore(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker);
  }
}
