package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.ManualTicker;
import java.time.Duration;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

/**
 * A scheduler whose tasks run only when a test advances its ticker: each due task runs, in the
 * order of its due time, with the ticker set to that time. Thread-safe.
 */
final class ManualScheduler implements UpstreamWaitingRoom.Scheduler {

  private final ManualTicker ticker;
  private final PriorityQueue<Task> tasks = new PriorityQueue<>();
  private long seq;

  ManualScheduler(ManualTicker ticker) {
    this.ticker = ticker;
  }

  ManualTicker ticker() {
    return ticker;
  }

  @Override
  public synchronized Future<?> schedule(Runnable task, long delayNanos) {
    if (delayNanos < 0) {
      throw new IllegalArgumentException("delayNanos must be >= 0, but was " + delayNanos);
    }
    Task t = new Task(ticker.read() + delayNanos, seq++, task);
    tasks.add(t);
    return t.future;
  }

  /** Moves time forward by {@code duration}, running every task due meanwhile at its time. */
  void advance(Duration duration) {
    long end = ticker.read() + duration.toNanos();
    for (;;) {
      Task next;
      synchronized (this) {
        next = tasks.peek();
        if (next == null || next.due - end > 0) {
          break;
        }
        tasks.poll();
        if (next.due - ticker.read() > 0) {
          ticker.advanceNanos(next.due - ticker.read());
        }
      }
      if (!next.future.isCancelled()) {
        next.task.run();
        next.future.complete(null);
      }
    }
    synchronized (this) {
      if (end - ticker.read() > 0) {
        ticker.advanceNanos(end - ticker.read());
      }
    }
  }

  /** Moves time forward by {@code millis} milliseconds. */
  void advanceMillis(long millis) {
    advance(Duration.ofMillis(millis));
  }

  /** The tasks scheduled and neither run nor cancelled. */
  synchronized int pending() {
    return (int) tasks.stream().filter(t -> !t.future.isCancelled()).count();
  }

  private record Task(long due, long seq, Runnable task, CompletableFuture<Void> future)
      implements Comparable<Task> {

    Task(long due, long seq, Runnable task) {
      this(due, seq, task, new CompletableFuture<>());
    }

    @Override
    public int compareTo(Task o) {
      int c = Long.compare(due - o.due, 0);
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }
}
