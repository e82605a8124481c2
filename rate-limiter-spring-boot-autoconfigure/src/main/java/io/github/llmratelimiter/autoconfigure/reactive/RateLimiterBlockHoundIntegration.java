package io.github.llmratelimiter.autoconfigure.reactive;

import java.util.List;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Declares to BlockHound, in an application that runs under it, the short waits the reactive path
 * may have on an event loop, each on a lock held only for a few in-memory steps; BlockHound loads
 * this class from {@code META-INF/services}, nothing else does. Without it, BlockHound would throw
 * inside these locks' acquisition, which leaves them corrupt (a Lettuce connection whose writers
 * then wait forever, a Redis reply never delivered). Each entry names the method, in its class,
 * inside which the wait is allowed ({@link #ALLOWED}).
 *
 * <ul>
 *   <li><b>The in-memory store's per-key lock</b> ({@code KeyEntry.lock}). The reactive filter calls
 *       the in-memory store directly on the event loop (it answers at once, with no I/O). Two
 *       requests of one key on two event loops at the same moment contend for the key's entry, and
 *       the second parks until the first releases it. Every section that holds an entry lock only
 *       updates that key's window log and bucket in memory (amortized constant time: it evicts the
 *       timestamps that expired, adds one, and refills the bucket arithmetically), with no I/O, no
 *       callback and no other wait inside but the locks of the same call's other levels, taken in
 *       one global order; the maintenance sweep (which never waits for a lock), the Actuator
 *       endpoint and a reset hold one entry at a time for the same kind of work.
 *   <li><b>Lettuce's writer lock</b> ({@code io.lettuce.core.protocol.SharedLock.incrementWriters}).
 *       The Redis store sends its one {@code EVALSHA} through Lettuce's asynchronous API on the
 *       calling thread, and Lettuce (6.8) takes this lock around every command it dispatches, for an
 *       atomic increment of its writer count; requests on several event loops contend for it. It
 *       waits longer only while Lettuce changes the connection's state exclusively (activation,
 *       deactivation, close), which moves queued commands in memory and writes to the channel
 *       without blocking. Every Lettuce user that dispatches from several threads shares it.
 *   <li><b>The Redis store's timer queue</b> ({@code Replies.check}, and its callback {@code
 *       lambda$check$2}, the compiler's name for the lambda that cancels the timeout when the reply
 *       arrives). The store schedules each call's timeout on its one timer thread when it sends the
 *       call (on the request's event loop) and cancels it when the reply arrives (on Lettuce's event
 *       loop); both take the timer queue's lock, which every holder keeps for one insertion or
 *       removal in a heap of the pending timeouts (logarithmic in their number), the timer thread
 *       included (it waits for the next timeout without holding it).
 *   <li><b>The Redis breaker's window</b> ({@code
 *       io.github.resilience4j.core.metrics.FixedSizeSlidingWindowMetrics.record} and {@code
 *       getSnapshot}). The Redis store records each reply's outcome in its circuit breaker (one per
 *       Redis master) on the thread that completes the call, an event loop; Resilience4j's
 *       count-based window guards its ring of outcomes with a lock, held to add one outcome and
 *       update the window's totals (constant time, no I/O, no callback), so replies completing on
 *       several event loops at once contend for it.
 * </ul>
 */
public final class RateLimiterBlockHoundIntegration implements BlockHoundIntegration {

  /** Creates the integration; BlockHound instantiates it. */
  public RateLimiterBlockHoundIntegration() {}

  /** The methods, class name then method name, inside which a wait is allowed. */
  public static final List<List<String>> ALLOWED = List.of(
      List.of("io.github.llmratelimiter.core.KeyEntry", "lock"),
      List.of("io.lettuce.core.protocol.SharedLock", "incrementWriters"),
      List.of("io.github.llmratelimiter.redis.Replies", "check"),
      List.of("io.github.llmratelimiter.redis.Replies", "lambda$check$2"),
      List.of("io.github.resilience4j.core.metrics.FixedSizeSlidingWindowMetrics", "record"),
      List.of("io.github.resilience4j.core.metrics.FixedSizeSlidingWindowMetrics", "getSnapshot"));

  @Override
  public void applyTo(BlockHound.Builder builder) {
    for (List<String> method : ALLOWED) {
      builder.allowBlockingCallsInside(method.get(0), method.get(1));
    }
  }
}
