package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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
 * Redis applies it once. Each write-back goes to, waits on and counts for the master that serves
 * its root key, as a call of that key does. It also keeps the hold after an outage, per master
 * ({@link #answered}).
 */
final class WriteBack {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  /** How often the journal is checked for calls to write back, in milliseconds. */
  static final long CHECK_MILLIS = 100;

  private final LuaRateLimitStore redis;
  private final OutageJournal journal;
  private final SlotRenewal renewal;
  private final Ticker ticker;
  private final AtomicBoolean flushing = new AtomicBoolean();
  private volatile ScheduledExecutorService timer;
  /** How long after Redis answers again its admissions must fit this instance's share too. */
  private final long holdNanos;
  /** Each master's hold, by its circuit breaker. */
  private final ConcurrentHashMap<RedisBreaker, Hold> holds = new ConcurrentHashMap<>();

  /** One master's hold: whether a call to it failed since it last answered, and until when. */
  private static final class Hold {
    volatile boolean interrupted;
    volatile boolean on;
    volatile long until;
  }

  WriteBack(LuaRateLimitStore redis, OutageJournal journal, SlotRenewal renewal, Ticker ticker,
      long retryNanos) {
    this.holdNanos = retryNanos + 2 * TimeUnit.MILLISECONDS.toNanos(CHECK_MILLIS);
    this.redis = redis;
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
   * circuit breaker covers it; {@code replies} are those of the master that serves the root key.
   *
   * @throws RedisException when a batch got no reply: the call is the failure policy's
   */
  void before(String root, long start, Replies replies) {
    if (journal.isEmpty()) {
      return;
    }
    OutageJournal.Batch batch;
    while ((batch = journal.next(root)) != null) {
      long[] ids;
      try {
        ids = replies.await(redis.submitWriteBack(batch, ticker.read()), start);
      } catch (RuntimeException e) {
        if (!refused(batch, e)) {
          throw e;
        }
        continue;
      }
      acknowledged(batch, ids);
    }
  }

  /** The errors of a server that will run the script later: the batch is sent again. */
  private static final List<String> TRANSIENT = List.of("BUSY", "LOADING", "MASTERDOWN",
      "TRYAGAIN", "CLUSTERDOWN", "READONLY", "NOSCRIPT", "MOVED", "ASK");

  /**
   * Drops a batch that can never be applied (the script failed on Redis, or it could not be
   * built), logging why, so that its root key is decided on Redis again rather than by the policy
   * for good; returns whether it was dropped (else the failure is Redis's: a timeout, a
   * connection, a busy or loading server, and the batch stays).
   */
  private boolean refused(OutageJournal.Batch batch, Throwable failure) {
    Throwable e = Replies.cause(failure);
    if (e instanceof RedisException) {
      String m = e.getMessage();
      if (!(e instanceof RedisCommandExecutionException) || m == null
          || TRANSIENT.stream().anyMatch(m::startsWith)) {
        return false;
      }
    }
    LOG.log(Level.WARNING, "Redis rate-limit store could not write back {0} calls the local"
        + " fallback admitted: {1}", batch.calls().size(), e.toString());
    journal.acknowledged(batch, new long[0], ticker.read());
    return true;
  }

  /** Like {@link #before} without blocking: completes once written back, or fails. */
  CompletableFuture<Void> beforeAsync(String root, long start, Replies replies) {
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
    } catch (RuntimeException e) {
      return refused(batch, e) ? beforeAsync(root, start, replies)
          : CompletableFuture.failedFuture(e);
    }
    return replies.within(sent, start).handle((ids, failure) -> {
      if (failure == null) {
        acknowledged(batch, ids);
      } else if (!refused(batch, failure)) {
        return CompletableFuture.<Void>failedFuture(failure);
      }
      return beforeAsync(root, start, replies);
    }).thenCompose(f -> f);
  }

  /**
   * Notes that a master answered a call; call it before its breaker records the success. Its first
   * answer after a failed call to it (a timeout, a refusal by its open breaker), or while its
   * breaker is not closed, starts its hold: for the retry interval plus two checks of the journal,
   * a call it admits must fit this instance's share too ({@link #holding}), so that the other
   * instances, whose circuit breakers let their write-backs through within that time, have handed
   * Redis what their fallbacks admitted before this instance admits past its share.
   */
  void answered(RedisBreaker breaker) {
    Hold h = hold(breaker);
    if (h.interrupted || breaker.degraded()) {
      h.interrupted = false;
      h.until = ticker.read() + holdNanos;
      h.on = true;
    }
  }

  /** Notes that a call to a master failed (or its breaker refused it): its next answer holds. */
  void failed(RedisBreaker breaker) {
    hold(breaker).interrupted = true;
  }

  /** Whether a call that master admits must fit this instance's share too. */
  boolean holding(RedisBreaker breaker) {
    Hold h = holds.get(breaker);
    if (h == null || !h.on) {
      return false;
    }
    if (ticker.read() - h.until >= 0) {
      h.on = false;
    }
    return h.on;
  }

  /** Whether some master is holding calls to this instance's share (for tests). */
  boolean holding() {
    for (RedisBreaker b : holds.keySet()) {
      if (holding(b)) {
        return true;
      }
    }
    return false;
  }

  private Hold hold(RedisBreaker breaker) {
    Hold h = holds.get(breaker); // one per master: a read, no lock
    return h != null ? h : holds.computeIfAbsent(breaker, b -> new Hold());
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
   * Writes back every root key's journal, one batch after the other, each with the permission of
   * the circuit breaker of the master that serves it; a root key whose write-back fails or is
   * refused waits for the next check. Never blocks: it runs on the timer that also checks the
   * calls that wait.
   */
  void flushAll() {
    if (journal.isEmpty() || !flushing.compareAndSet(false, true)) {
      return;
    }
    flush(journal.roots(), 0).whenComplete((done, failure) -> flushing.set(false));
  }

  /** Writes back the roots from {@code i} on, one batch at a time. */
  private CompletableFuture<Void> flush(List<String> roots, int from) {
    for (int at = from; at < roots.size(); at++) {
      OutageJournal.Batch batch = journal.next(roots.get(at));
      if (batch == null) {
        continue;
      }
      LuaRateLimitStore.Call first = batch.calls().get(0).call;
      RedisMasters.Master master = redis.master(first.levels(), first.keys());
      RedisBreaker breaker = master.breaker();
      if (!breaker.tryAcquirePermission()) {
        continue; // this root waits for the next check
      }
      long start = System.nanoTime();
      CompletableFuture<long[]> reply;
      try {
        reply = redis.submitWriteBack(batch, ticker.read());
      } catch (RuntimeException e) {
        if (refused(batch, e)) {
          breaker.releasePermission();
        } else {
          breaker.failed(Replies.redisException(e), start);
          failed(breaker);
        }
        continue;
      }
      int sent = at;
      return master.replies().within(reply, start).handle((ids, failure) -> {
        if (failure != null) {
          if (refused(batch, failure)) {
            breaker.succeeded(start); // Redis answered
          } else {
            breaker.failed(Replies.redisException(failure), start);
            failed(breaker);
          }
          return flush(roots, sent + 1);
        }
        answered(breaker);
        breaker.succeeded(start);
        acknowledged(batch, ids);
        return flush(roots, sent); // its next batch, if any
      }).thenCompose(f -> f);
    }
    return CompletableFuture.completedFuture(null);
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
