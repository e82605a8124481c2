package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;
import io.lettuce.core.RedisException;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Hands Redis what the local fallback admitted during an outage ({@link OutageJournal}), one
 * {@code write-back.lua} call per batch of a root key: before this instance decides a call of
 * that root key on Redis (in the call's own wait, never past its longest wait), and for every root
 * key as soon as Redis answers again (a check every {@value #CHECK_MILLIS} ms while something
 * waits, which also serves as a probe of the circuit breaker, and after every call Redis
 * answers). A batch that gets no reply stays in the journal and is sent again, as it was, later:
 * Redis applies it once. It also keeps the hold after an outage ({@link #answered}).
 */
final class WriteBack {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  /** How often the journal is checked for calls to write back, in milliseconds. */
  static final long CHECK_MILLIS = 100;

  private final LuaRateLimitStore redis;
  private final Replies replies;
  private final RedisBreaker breaker;
  private final OutageJournal journal;
  private final SlotRenewal renewal;
  private final Ticker ticker;
  private final AtomicBoolean flushing = new AtomicBoolean();
  private volatile ScheduledExecutorService timer;
  /** How long after Redis answers again its admissions must fit this instance's share too. */
  private final long holdNanos;
  /** The failed calls to Redis counted when Redis last answered. */
  private volatile long seenErrors;
  private volatile boolean holding;
  private volatile long holdUntil;

  WriteBack(LuaRateLimitStore redis, RedisBreaker breaker, OutageJournal journal,
      SlotRenewal renewal, Ticker ticker, long retryNanos) {
    this.holdNanos = retryNanos + 2 * TimeUnit.MILLISECONDS.toNanos(CHECK_MILLIS);
    this.redis = redis;
    this.replies = redis.replies();
    this.breaker = breaker;
    this.journal = journal;
    this.renewal = renewal;
    this.ticker = ticker;
  }

  /** Checks the journal every {@value #CHECK_MILLIS} ms on {@code timer}. */
  void start(ScheduledExecutorService timer) {
    this.timer = timer;
    timer.scheduleWithFixedDelay(() -> {
      try {
        flushAll();
      } catch (RuntimeException e) { // an escaped exception would end the checks for good
        LOG.log(Level.WARNING, "Redis rate-limit store write-back failed", e);
      }
    }, CHECK_MILLIS, CHECK_MILLIS, TimeUnit.MILLISECONDS);
  }

  /**
   * Writes back the journal of a call's root key before the call is decided on Redis, waiting as
   * the call does (from {@code start}, its longest wait at most); the call's permission of the
   * circuit breaker covers it.
   *
   * @throws RedisException when a batch got no reply: the call is the failure policy's
   */
  void before(String root, long start) {
    if (journal.isEmpty()) {
      return;
    }
    OutageJournal.Batch batch;
    while ((batch = journal.next(root)) != null) {
      long[] ids = replies.await(redis.submitWriteBack(batch, ticker.read()), start);
      acknowledged(batch, ids);
    }
  }

  /** Like {@link #before} without blocking: completes once written back, or fails. */
  CompletableFuture<Void> beforeAsync(String root, long start) {
    if (journal.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    OutageJournal.Batch batch = journal.next(root);
    if (batch == null) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<long[]> sent;
    try {
      sent = redis.submitWriteBack(batch, ticker.read());
    } catch (RedisException e) {
      return CompletableFuture.failedFuture(e);
    }
    return replies.within(sent, start).thenCompose(ids -> {
      acknowledged(batch, ids);
      return beforeAsync(root, start);
    });
  }

  /**
   * Notes that Redis answered a call; call it before the breaker records the success. The first
   * answer after a failed call (of any kind: a timeout, an open breaker's refusal, a heartbeat)
   * starts the hold: for the retry interval plus two checks of the journal, a call Redis admits
   * must fit this instance's share too ({@link #holding}), so that the other instances, whose
   * circuit breakers let their write-backs through within that time, have handed Redis what their
   * fallbacks admitted before this instance admits past its share.
   */
  void answered() {
    long errors = breaker.errorCount();
    if (errors != seenErrors || breaker.degraded()) {
      seenErrors = errors;
      holdUntil = ticker.read() + holdNanos;
      holding = true;
    }
  }

  /** Whether a call Redis admits must fit this instance's share too (see {@link #answered}). */
  boolean holding() {
    if (holding && ticker.read() - holdUntil >= 0) {
      holding = false;
    }
    return holding;
  }

  /** After a call Redis answered: writes back what waits, on the timer. */
  void contacted() {
    ScheduledExecutorService t = timer;
    if (!journal.isEmpty() && t != null && !flushing.get()) {
      try {
        t.execute(this::flushAll);
      } catch (RuntimeException e) { // shut down: the store is closing
        LOG.log(Level.DEBUG, "write-back not scheduled: {0}", e.toString());
      }
    }
  }

  /**
   * Writes back every root key's journal, one batch after the other, each with the circuit
   * breaker's permission; stops at the first failure (the rest waits for the next check). Never
   * blocks: it runs on the timer that also checks the calls that wait.
   */
  void flushAll() {
    if (journal.isEmpty() || !flushing.compareAndSet(false, true)) {
      return;
    }
    flush(journal.roots(), 0).whenComplete((done, failure) -> flushing.set(false));
  }

  /** Writes back the roots from {@code i} on, one batch at a time. */
  private CompletableFuture<Void> flush(List<String> roots, int i) {
    int at = i;
    OutageJournal.Batch batch = null;
    while (at < roots.size() && (batch = journal.next(roots.get(at))) == null) {
      at++;
    }
    if (batch == null || !breaker.tryAcquirePermission()) {
      return CompletableFuture.completedFuture(null);
    }
    OutageJournal.Batch sent = batch;
    int next = at;
    long start = System.nanoTime();
    CompletableFuture<long[]> reply;
    try {
      reply = redis.submitWriteBack(sent, ticker.read());
    } catch (RedisException e) {
      breaker.failed(e, start);
      return CompletableFuture.completedFuture(null);
    } catch (RuntimeException e) {
      breaker.releasePermission();
      return CompletableFuture.failedFuture(e);
    }
    return replies.within(reply, start).handle((ids, failure) -> {
      if (failure != null) {
        breaker.failed(Replies.redisException(failure), start);
        return CompletableFuture.<Void>completedFuture(null);
      }
      answered();
      breaker.succeeded(start);
      acknowledged(sent, ids);
      return flush(roots, next);
    }).thenCompose(f -> f);
  }

  /**
   * Takes a batch's acknowledgement: renews the slots its calls still hold on Redis, and sends
   * there the settlements and releases that came after the batch was formed (each lost if Redis
   * does not answer it, as any settlement).
   */
  private void acknowledged(OutageJournal.Batch batch, long[] ids) {
    for (OutageJournal.Follow f : journal.acknowledged(batch, ids, ticker.read())) {
      CompletableFuture<?> sent = null;
      if (f.settled() != null) {
        sent = redis.submitReconcile(f.onRedis(), f.settled());
      }
      if (f.release()) {
        sent = redis.submitRelease(f.onRedis());
      } else if (f.renew()) {
        renewal.track(f.onRedis());
      }
      if (sent != null) {
        sent.whenComplete((done, failure) -> {
          if (failure != null) {
            LOG.log(Level.DEBUG, "a settlement after a write-back failed: {0}", failure.toString());
          }
        });
      }
    }
  }
}
