package io.github.llmratelimiter.autoconfigure.reactive;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Declares to BlockHound, in an application that runs under it, the one wait the reactive path may
 * have on an event loop: the in-memory store's per-key lock. BlockHound loads it from {@code
 * META-INF/services}; nothing else does.
 *
 * <p>The reactive filter calls the in-memory store directly on the event loop (it answers at once,
 * with no I/O). Two requests of one key on two event loops at the same moment contend for the key's
 * entry lock, and the second parks until the first releases it, which BlockHound would report as a
 * blocking call. The wait is bounded: every section that holds an entry lock only updates that
 * key's window log and bucket in memory (amortized constant time: it evicts the timestamps that
 * expired, adds one, and refills the bucket arithmetically), with no I/O, no callback and no other
 * wait inside but the locks of the same call's other levels, taken in one global order; the
 * maintenance sweep (which never waits for a lock), the Actuator endpoint and a reset hold one
 * entry at a time for the same kind of work.
 * A Redis store never takes this lock.
 */
public final class RateLimiterBlockHoundIntegration implements BlockHoundIntegration {

  /** Creates the integration; BlockHound instantiates it. */
  public RateLimiterBlockHoundIntegration() {}

  @Override
  public void applyTo(BlockHound.Builder builder) {
    builder.allowBlockingCallsInside("io.github.llmratelimiter.core.KeyEntry", "lock");
  }
}
