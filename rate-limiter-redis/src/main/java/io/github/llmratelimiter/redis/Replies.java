package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * How long a caller waits for a reply from one Redis server (a standalone server, a Sentinel's
 * master, or one master of a Cluster): while that server keeps answering the calls sent before (a
 * burst queued on the one connection to it, which it serves in order), up to the longest wait; and
 * no longer than the silence timeout once it answers nothing at all, as seen by an event loop that
 * was running ({@link EventLoopWatch}). So a timeout measures that server, not the queue in front
 * of it, nor a loop that busy request threads kept off the processor, nor the other masters of a
 * Cluster: each master has its own silence clock ({@link #sibling}, {@link RedisMasters}).
 */
final class Replies {

  private final long silenceNanos;
  private final long maxWaitNanos;
  private final @Nullable EventLoopWatch loop;
  private final ScheduledExecutorService timer;
  private volatile long last;

  /**
   * @param silenceNanos how long Redis may answer nothing while a caller waits
   * @param maxWaitNanos the longest a caller waits in all
   * @param loop the watch on the loop that reads replies; {@code null} when the store has no
   *     access to it (a client of the application's): a silence then counts as seen
   * @param timer runs the checks of the calls that wait
   */
  Replies(long silenceNanos, long maxWaitNanos, @Nullable EventLoopWatch loop,
      ScheduledExecutorService timer) {
    this.silenceNanos = silenceNanos;
    this.maxWaitNanos = maxWaitNanos;
    this.loop = loop;
    this.timer = timer;
    this.last = System.nanoTime();
  }

  /** The same waits, with a silence clock of its own: for another master of a Cluster. */
  Replies sibling() {
    return new Replies(silenceNanos, maxWaitNanos, loop, timer);
  }

  /** How long Redis may answer nothing while a caller waits, in nanoseconds. */
  long silenceNanos() {
    return silenceNanos;
  }

  /** The longest a caller waits in all, in nanoseconds. */
  long maxWaitNanos() {
    return maxWaitNanos;
  }

  /** Notes a reply from this server (an answer or a Redis error, not a local timeout). */
  void arrived(Throwable failure) {
    if (failure == null || cause(failure) instanceof RedisCommandExecutionException) {
      last = System.nanoTime();
    }
  }

  /**
   * Waits for a reply to a call sent at {@code sentAt}, on the caller's thread (no timer task).
   *
   * @throws RedisCommandTimeoutException when Redis answered nothing for the silence timeout, or
   *     the longest wait passed
   * @throws RedisException when the call failed (a connection or Redis error)
   */
  <T> T await(CompletableFuture<T> reply, long sentAt) {
    for (;;) {
      long now = System.nanoTime();
      long next = nextCheck(now, sentAt);
      if (next - now <= 0 && !reply.isDone()) {
        throw timeout(now, sentAt);
      }
      try {
        return reply.get(Math.max(0, next - now), TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        // Redis may have answered earlier calls meanwhile: measure the silence again
      } catch (ExecutionException e) {
        throw redisException(e.getCause());
      } catch (CancellationException e) {
        throw redisException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RedisException("interrupted while waiting for Redis", e);
      }
    }
  }

  /**
   * Returns a future of the reply to a call sent at {@code sentAt} that fails, without blocking
   * anyone, with a {@link RedisCommandTimeoutException} when Redis answered nothing for the silence
   * timeout, or the longest wait passed; and with a {@link RedisException} when the call failed.
   * The waits are checked on the timer.
   */
  <T> CompletableFuture<T> within(CompletableFuture<T> reply, long sentAt) {
    CompletableFuture<T> result = new CompletableFuture<>();
    reply.whenComplete((value, failure) -> {
      if (failure == null) {
        result.complete(value);
      } else {
        result.completeExceptionally(redisException(failure));
      }
    });
    check(result, sentAt);
    return result;
  }

  /** Fails {@code result} if its call timed out, else checks again when it next could. */
  private <T> void check(CompletableFuture<T> result, long sentAt) {
    if (result.isDone()) {
      return;
    }
    long now = System.nanoTime();
    long next = nextCheck(now, sentAt);
    if (next - now <= 0) {
      result.completeExceptionally(timeout(now, sentAt));
      return;
    }
    ScheduledFuture<?> again = timer.schedule(() -> check(result, sentAt), next - now,
        TimeUnit.NANOSECONDS);
    result.whenComplete((value, failure) -> again.cancel(false));
  }

  /**
   * When to look again at a call sent at {@code sentAt} that has no reply yet, as of {@code now}:
   * {@code now} itself once it has timed out.
   */
  private long nextCheck(long now, long sentAt) {
    long giveUpAt = sentAt + maxWaitNanos;
    long quietUntil = Math.max(sentAt, last) + silenceNanos;
    if (now - giveUpAt >= 0) {
      return now;
    }
    if (now - quietUntil < 0) {
      return Math.min(quietUntil, giveUpAt);
    }
    if (loop == null || loop.tickedAt() - quietUntil >= 0) {
      return now; // the loop ran after the silence timeout and read nothing: Redis is silent
    }
    return Math.min(now + TimeUnit.MILLISECONDS.toNanos(EventLoopWatch.TICK_MILLIS), giveUpAt);
  }

  private RedisCommandTimeoutException timeout(long now, long sentAt) {
    return new RedisCommandTimeoutException(now - (sentAt + maxWaitNanos) >= 0
        ? "no reply within " + TimeUnit.NANOSECONDS.toMillis(maxWaitNanos) + " ms"
        : "Redis answered nothing for " + TimeUnit.NANOSECONDS.toMillis(now - last)
            + " ms (the call waited " + TimeUnit.NANOSECONDS.toMillis(now - sentAt) + " ms)");
  }

  private static Throwable cause(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || c instanceof ExecutionException)
        && c.getCause() != null) {
      c = c.getCause();
    }
    return c;
  }

  /** A failure of a call as Lettuce's exception, which the store's failure handling expects. */
  static RedisException redisException(Throwable t) {
    Throwable cause = cause(t);
    return cause instanceof RedisException r ? r : new RedisException(cause);
  }
}
