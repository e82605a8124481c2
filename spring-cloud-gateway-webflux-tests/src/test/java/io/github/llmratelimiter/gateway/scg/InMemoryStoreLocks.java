package io.github.llmratelimiter.gateway.scg;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound that the in-memory store's per-key lock is not a blocking call: it is held only
 * while one decision is computed in memory (no I/O, no waiting on anything else), so a contended
 * caller waits microseconds, as it would on a {@code synchronized} block, which BlockHound never
 * reports. It parks (an {@code AbstractQueuedSynchronizer}) rather than spins, and BlockHound
 * reports every park. Nothing else is allowed: the Redis store, the gateway and the adapters stay
 * checked.
 */
public final class InMemoryStoreLocks implements BlockHoundIntegration {

  @Override
  public void applyTo(BlockHound.Builder builder) {
    builder.allowBlockingCallsInside("io.github.llmratelimiter.core.KeyEntry", "lock");
  }
}
