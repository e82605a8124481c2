package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.Duration;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Runs an in-memory store's maintenance again and again, in the background.
 *
 * <p>Each run of the task is one bounded step: it examines at most a fixed number of tracked keys,
 * drops those whose state equals a fresh one and ranks the busiest for {@link
 * StoreAdministration#top}. The store hands its task over once, when it is created, and cancels the
 * returned future when it is {@linkplain RateLimitStore#close() closed}; the task holds the store
 * only weakly, so a store that is dropped without being closed stops being maintained once it is
 * garbage-collected.
 *
 * <p>{@link #every(Duration)} runs the task on one daemon thread shared by every store. A test, or
 * an application with a scheduler of its own, implements this interface instead: keeping the task
 * and running it by hand makes maintenance as deterministic as the store's {@link Ticker}.
 */
@FunctionalInterface
public interface MaintenanceScheduler {

  /**
   * Starts running {@code maintenance} repeatedly, until the returned future is cancelled.
   *
   * <p>The task never throws, is cheap when there is nothing to do, and may run on any thread. Runs
   * that overlap are harmless: a run skips a budget that another run is maintaining.
   *
   * @param maintenance one bounded maintenance step of a store
   * @return a future whose {@link Future#cancel(boolean)} stops the runs
   */
  Future<?> schedule(Runnable maintenance);

  /**
   * Returns the scheduler that runs each task every {@code interval} (from the end of one run to
   * the start of the next), on a daemon thread named {@code rate-limiter-maintenance} that every
   * store shares.
   *
   * @param interval the pause between two runs, positive
   * @return the scheduler
   * @throws IllegalArgumentException if the interval is null, not positive or beyond 292 years
   */
  static MaintenanceScheduler every(Duration interval) {
    long nanos = Args.nanos("interval", interval);
    return task -> MaintenanceThread.EXECUTOR.scheduleWithFixedDelay(
        task, nanos, nanos, TimeUnit.NANOSECONDS);
  }
}
