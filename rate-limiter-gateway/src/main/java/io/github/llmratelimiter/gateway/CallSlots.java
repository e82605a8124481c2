package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * The slots an admitted call holds on its policy's limits on calls in flight ({@code
 * concurrency.limit}), to be given back exactly once when the call ends: its response completes,
 * its stream ends, its client disconnects or its handler fails. A front door releases them when the
 * response is over ({@link RateLimitGateway#finish}); a slot never released frees itself when its
 * lease expires ({@code concurrency.lease-timeout}, the last-resort cap), and on Redis sooner,
 * once the instance that holds it stops renewing it ({@code ratelimiter.redis.slot-lease}).
 *
 * <p>Only the first release counts; later ones return {@code false} and change nothing, so every
 * path that sees the end of a call may release it. Thread-safe.
 */
public final class CallSlots {

  private final RateLimitEnforcer enforcer;
  private final String policy;
  private final Reservation reservation;
  private final AtomicBoolean released = new AtomicBoolean();
  private final @Nullable String upstream;

  CallSlots(RateLimitEnforcer enforcer, String policy, Reservation reservation,
      @Nullable String upstream) {
    this.upstream = upstream;
    this.enforcer = enforcer;
    this.policy = policy;
    this.reservation = reservation;
  }

  /** The name of the upstream whose slot the call holds too, or null. */
  @Nullable String upstream() {
    return upstream;
  }

  /**
   * Returns the name of the policy whose budgets hold the slots.
   *
   * @return the policy's name
   */
  public String policy() {
    return policy;
  }

  /**
   * Returns the store's reservation that holds the slots.
   *
   * @return the reservation
   */
  public Reservation reservation() {
    return reservation;
  }

  /**
   * Gives the slots back ({@link RateLimitStore#release}); a store failure is logged, and the
   * leases then expire by themselves.
   *
   * @return whether this call released them ({@code false} if they were released already)
   */
  public boolean release() {
    if (!released.compareAndSet(false, true)) {
      return false;
    }
    enforcer.release(this);
    return true;
  }

  /**
   * Gives the slots back like {@link #release} without blocking the caller ({@link
   * RateLimitStore#releaseAsync}).
   *
   * @return a stage that completes with whether this call released them, once the store has; it
   *     never fails
   */
  public CompletionStage<Boolean> releaseAsync() {
    if (!released.compareAndSet(false, true)) {
      return CompletableFuture.completedFuture(false);
    }
    return enforcer.releaseAsync(this).thenApply(ignored -> true);
  }

  /**
   * Returns whether the slots were released.
   *
   * @return whether one of the releasing methods ran
   */
  public boolean released() {
    return released.get();
  }

  @Override
  public String toString() {
    return "CallSlots[policy=" + policy + ", released=" + released.get() + "]";
  }
}
