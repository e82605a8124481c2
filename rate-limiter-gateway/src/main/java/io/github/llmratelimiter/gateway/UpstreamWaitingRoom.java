package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.internal.Args;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A fair waiting room for calls that fit their tenant's budgets but not their upstream's (a deny
 * with {@link Reason#UPSTREAM_LIMIT}): a call waits, up to its {@linkplain Call#maxWait() longest
 * wait}, until the upstream admits it, and waiting calls are served in a fair order.
 *
 * <p><b>Order.</b> Per upstream, the waiting calls are ordered by {@linkplain Call#priority()
 * priority class} first (a lower class always goes first), then, within a class, by the Virtual
 * Token Counter of Sheng et al., "Fairness in Serving Large Language Models" (OSDI 2024): every
 * tenant has a counter of the model tokens it was served on the upstream, each call's tokens
 * divided by the call's {@linkplain Call#weight() weight}; the backlogged tenant (one with a call
 * waiting) with the least counter goes first, the tenant whose first waiting call came first on a
 * tie, and a tenant's calls go in the order they came. A tenant that becomes backlogged has its
 * counter lifted to the least counter of the tenants backlogged in its class (to the counter of
 * the last tenant that left the class's backlog when none is), so that time spent idle is not
 * banked; a call admitted without waiting counts as one that passed through the order at once
 * (lifted, served, gone). A call's estimate is counted when it is admitted, so that the order is
 * right at once; {@link #settled} corrects it with the tokens the call used. A tenant not
 * backlogged and not served for the {@linkplain #UpstreamWaitingRoom(Ticker, Scheduler, int,
 * Duration) memory} is forgotten (its counter starts again from 0, then lifted), so idle tenants
 * hold no memory; the room keeps one small entry per upstream name it was given.
 *
 * <p><b>Wake-ups.</b> Only the first call of the order is tried again ({@link Attempt#attempt()}),
 * then the next one while they are admitted; a call that arrives while others wait joins the
 * order instead of being decided ahead of them. The first call is tried again when the upstream's
 * state that denied it lapses (its deny's {@link Decision#retryAfterMs()}, on the injected {@link
 * Scheduler}), and whenever {@link #capacityMayHaveFreed} says that capacity may have freed (a slot
 * released, a reservation reconciled, a provider's report applied). The room's own order never
 * polls.
 *
 * <p><b>Shared order.</b> A room given a store's {@link UpstreamOrder} ({@link
 * #UpstreamWaitingRoom(Ticker, Scheduler, Map, int, Duration, Listener, UpstreamOrder,
 * Collection)}) orders the calls of its upstreams with every other caller of the store (on Redis,
 * every gateway instance) in that order instead of its own: a call that must wait {@linkplain
 * UpstreamOrder#enter enters} it, and on every wake-up the room asks the order for its {@linkplain
 * UpstreamOrder#first first} call and tries it when it waits here ({@link Attempt#attempt(String)},
 * with its id), then the next while they are admitted; a call first on another instance is left to
 * that instance. Besides the wake-ups above, the room wakes when the order {@linkplain
 * UpstreamOrder#listen tells} it that any caller freed capacity, and, while calls wait here and it
 * heard nothing for the order's {@linkplain UpstreamOrder#pollInterval() poll interval}, once per
 * interval; without calls waiting here it never asks. {@link #capacityMayHaveFreed} {@linkplain
 * UpstreamOrder#signal signals} the order. A call that leaves without admission (its longest wait,
 * a cancel, a deny for another reason, the room full or closed) {@linkplain UpstreamOrder#leave
 * leaves} the order. When the order cannot answer (its store is down), the room tries its own first
 * call for that wake-up, so that no call waits on an order that cannot say whose turn it is; every
 * stage still completes once, as above.
 *
 * <p><b>Outcomes.</b> The stage {@link #await} returns completes once: with the first admitted
 * attempt; with an attempt denied for another reason than the upstream (the caller's own budgets
 * no longer admit it), at once; with the call's last upstream deny, or {@link Attempt#denied} when
 * it was never tried, once its longest wait passed, or at once when the room for its upstream is
 * full; exceptionally when an attempt fails. Completing the stage from outside (cancelling it: a
 * client that disconnected) removes the call from the order at once; it is never tried again, and
 * an attempt in flight that admits it is given back ({@link Attempt#abandon}).
 *
 * <p><b>Threads.</b> Nothing blocks a thread: a waiting call is a stage and an entry in the order.
 * Stages complete, and attempts start, on the thread that awaits, the scheduler's thread, the
 * thread that signals, or the thread that completes an attempt; a reactive caller that must not
 * continue there moves on with its own scheduler. A blocking caller that waits for the stage
 * holds its thread for the wait ({@link RateLimitEnforcer#acquire(String, RateLimitKey, double,
 * java.util.function.LongSupplier)} does, at most the call's longest wait); a servlet front door
 * that must not hold its thread starts the request's asynchronous processing instead, answers when
 * the stage completes, and cancels the stage when the container reports the client gone or the
 * async timeout. Thread-safe.
 */
public final class UpstreamWaitingRoom implements AutoCloseable {

  /** The calls that wait at most for one upstream when none is configured. */
  public static final int DEFAULT_MAX_WAITERS = 1000;

  /** How long a tenant's counter is remembered when none is configured. */
  public static final Duration DEFAULT_MEMORY = Duration.ofMinutes(1);

  private static final System.Logger LOG = System.getLogger(UpstreamWaitingRoom.class.getName());

  private final Ticker ticker;
  private final Scheduler scheduler;
  private final int maxWaiters;
  private final Map<String, Integer> maxWaitersByUpstream;
  private final long memoryNanos;
  private final Listener listener;
  private final ConcurrentHashMap<String, Line> lines = new ConcurrentHashMap<>();
  private final @Nullable UpstreamOrder order;
  /** The upstreams whose calls wait in {@link #order}, by name. */
  private final Map<String, Upstream> ordered;
  private final long pollNanos;
  private final @Nullable AutoCloseable listening;
  /** Whether the order's last answer was a failure (logged once until it answers again). */
  private final AtomicBoolean orderDown = new AtomicBoolean();
  private volatile boolean closed;

  /**
   * Creates a waiting room.
   *
   * @param ticker the time of deadlines and retries; the scheduler's delays are measured on it
   * @param scheduler runs the retries and the deadlines
   * @param maxWaitersPerUpstream the calls that may wait for one upstream at once, at least 1;
   *     one more is refused at once, unless its tenant waits with fewer calls than the tenant that
   *     waits with the most, whose latest call then leaves with its deny
   * @param memory how long a tenant that neither waits nor is served keeps its counter, positive
   * @throws IllegalArgumentException if an argument is null or out of range
   */
  public UpstreamWaitingRoom(
      Ticker ticker, Scheduler scheduler, int maxWaitersPerUpstream, Duration memory) {
    this(ticker, scheduler, maxWaitersPerUpstream, memory, (call, ending, waitedNanos) -> { });
  }

  /**
   * Creates a waiting room that tells a listener how each wait ended (for metrics).
   *
   * @param ticker the time of deadlines and retries; the scheduler's delays are measured on it
   * @param scheduler runs the retries and the deadlines
   * @param maxWaitersPerUpstream the calls that may wait for one upstream at once, at least 1
   * @param memory how long a tenant that neither waits nor is served keeps its counter, positive
   * @param listener told once about every call that waited or was refused a wait
   * @throws IllegalArgumentException if an argument is null or out of range
   */
  public UpstreamWaitingRoom(Ticker ticker, Scheduler scheduler, int maxWaitersPerUpstream,
      Duration memory, Listener listener) {
    this(ticker, scheduler, Map.of(), maxWaitersPerUpstream, memory, listener);
  }

  /**
   * Creates a waiting room whose upstreams may each bound their waiting calls differently.
   *
   * @param ticker the time of deadlines and retries; the scheduler's delays are measured on it
   * @param scheduler runs the retries and the deadlines
   * @param maxWaitersByUpstream the calls that may wait for an upstream at once, by its name; each
   *     at least 1
   * @param maxWaitersPerUpstream the calls that may wait at once for an upstream not named there,
   *     at least 1
   * @param memory how long a tenant that neither waits nor is served keeps its counter, positive
   * @param listener told once about every call that waited or was refused a wait
   * @throws IllegalArgumentException if an argument is null or out of range
   */
  public UpstreamWaitingRoom(Ticker ticker, Scheduler scheduler,
      Map<String, Integer> maxWaitersByUpstream, int maxWaitersPerUpstream,
      Duration memory, Listener listener) {
    this(ticker, scheduler, maxWaitersByUpstream, maxWaitersPerUpstream, memory, listener, null,
        List.of());
  }

  /**
   * Creates a waiting room whose upstreams' calls wait in a store's shared order.
   *
   * @param ticker the time of deadlines and retries; the scheduler's delays are measured on it
   * @param scheduler runs the retries, the deadlines and the polls of the order
   * @param maxWaitersByUpstream the calls that may wait here for an upstream at once, by its name;
   *     each at least 1
   * @param maxWaitersPerUpstream the calls that may wait here at once for an upstream not named
   *     there, at least 1
   * @param memory how long a tenant that neither waits nor is served keeps its counter in the
   *     room's own order, positive
   * @param listener told once about every call that waited or was refused a wait
   * @param order the order of the store the attempts ask ({@link
   *     io.github.llmratelimiter.core.RateLimitStore#upstreamOrder()}), or {@code null} for the
   *     room's own order
   * @param upstreams the upstreams whose calls wait in {@code order}; the calls of an upstream not
   *     among them wait in the room's own order
   * @throws IllegalArgumentException if an argument other than {@code order} is null or out of
   *     range
   */
  public UpstreamWaitingRoom(Ticker ticker, Scheduler scheduler,
      Map<String, Integer> maxWaitersByUpstream, int maxWaitersPerUpstream,
      Duration memory, Listener listener, @Nullable UpstreamOrder order,
      Collection<Upstream> upstreams) {
    Args.notNull("upstreams", upstreams);
    Map<String, Upstream> byName = new HashMap<>();
    if (order != null) {
      for (Upstream u : upstreams) {
        byName.put(Args.notNull("upstreams[]", u).name(), u);
      }
    }
    this.ordered = Map.copyOf(byName);
    this.order = order;
    this.pollNanos = order == null ? 0 : Args.nanos("order.pollInterval()", order.pollInterval());
    Args.notNull("maxWaitersByUpstream", maxWaitersByUpstream);
    maxWaitersByUpstream.forEach((name, max) -> Args.positive(
        "maxWaitersByUpstream[" + name + "]", max == null ? 0 : max));
    this.maxWaitersByUpstream = Map.copyOf(maxWaitersByUpstream);
    this.ticker = Args.notNull("ticker", ticker);
    this.scheduler = Args.notNull("scheduler", scheduler);
    this.maxWaiters = (int) Args.positive("maxWaitersPerUpstream", maxWaitersPerUpstream);
    this.memoryNanos = Args.nanos("memory", memory);
    this.listener = Args.notNull("listener", listener);
    this.listening = order == null || ordered.isEmpty() ? null : listen(order);
  }

  /** Wakes a line when the order tells that its upstream may admit; null when it cannot listen. */
  private @Nullable AutoCloseable listen(UpstreamOrder shared) {
    try {
      return shared.listen(upstream -> {
        Line line = lines.get(upstream);
        if (line != null && line.target != null) {
          wake(line);
        }
      });
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "The upstream order takes no listener ("
          + e.getClass().getName() + "): waiting calls are tried on their retries and polls");
      return null;
    }
  }

  /**
   * Decides a call through the room: tried at once when no call waits for its upstream, else it
   * joins the order without being tried; after an upstream deny it waits as {@link #await(Call,
   * Object, Attempt)} does. A call with a longest wait of 0 is tried at once and never waits.
   *
   * @param <X> the result of one attempt
   * @param call who waits for which upstream, and how long
   * @param attempt decides the call once
   * @return a stage that completes as the type's description says; never {@code null}
   * @throws IllegalArgumentException if an argument is null
   */
  public <X> CompletionStage<X> await(Call call, Attempt<X> attempt) {
    Waiter<X> w = waiter(call, attempt);
    Line line = line(call.upstream());
    boolean othersWait;
    synchronized (line) {
      othersWait = line.size > 0;
    }
    if (othersWait && w.waits) {
      enter(line, w, 0);
    } else {
      first(line, w);
    }
    return w.future;
  }

  /**
   * Lets a call wait whose own first attempt the upstream denied: it joins the order at once, as
   * the one {@link #await(Call, Attempt)} makes would have. A call admitted by its first attempt
   * while others wait went ahead of them: {@link #await(Call, Attempt)} avoids that.
   *
   * @param <X> the result of one attempt
   * @param call who waits for which upstream, and how long
   * @param denied the first attempt's result, an upstream deny
   * @param attempt decides the call once more
   * @return a stage that completes as the type's description says
   * @throws IllegalArgumentException if an argument is null
   */
  public <X> CompletionStage<X> await(Call call, X denied, Attempt<X> attempt) {
    Args.notNull("denied", denied);
    Waiter<X> w = waiter(call, attempt);
    w.last = denied;
    Line line = line(call.upstream());
    Decision d = decisionOf(w, denied);
    if (d == null) {
      return w.future;
    }
    if (!w.waits || d.reason() != Reason.UPSTREAM_LIMIT || !d.retryable()) {
      w.future.complete(denied);
    } else {
      enter(line, w, d.retryAfterMs());
    }
    return w.future;
  }

  /**
   * Says that an upstream may admit a call again (a slot released, a reservation reconciled, a
   * provider's report applied): the first waiting call is tried again, at once or, when an attempt
   * is in flight, right after it. Cheap when no call waits. For an upstream whose calls wait in the
   * store's order, it {@linkplain UpstreamOrder#signal signals} the order, whose listeners (this
   * room's among them, on every instance) wake.
   *
   * @param upstream the upstream's name
   */
  public void capacityMayHaveFreed(String upstream) {
    UpstreamOrder shared = order;
    if (shared != null && upstream != null && ordered.containsKey(upstream)) {
      try {
        shared.signal(upstream); // its listeners, this room's among them, wake
        return;
      } catch (RuntimeException e) {
        orderFailed(e);
      }
    }
    Line line = upstream == null ? null : lines.get(upstream);
    if (line != null) {
      pump(line);
    }
  }

  /**
   * Counts the estimate of a call its upstream admitted without the room (a caller that decided
   * its first attempt itself) in its tenant's counter, as the room counts a call it admits at
   * once: a tenant not backlogged in the call's class is first lifted as one that becomes
   * backlogged, so that service taken while nobody waited is not held against it later.
   *
   * @param upstream the upstream's name
   * @param tenant the tenant
   * @param weight the tenant's weight, finite and positive
   * @param priority the call's priority class
   * @param estimate the call's estimated model tokens, at least 0
   * @throws IllegalArgumentException if an argument is null or out of range
   */
  public void admitted(
      String upstream, String tenant, double weight, int priority, long estimate) {
    Args.notNull("upstream", upstream);
    Args.notNull("tenant", tenant);
    Args.positiveFinite("weight", weight);
    Args.notNegative("estimate", estimate);
    Line line = line(upstream);
    synchronized (line) {
      long now = now();
      line.direct(line.tenant(tenant, now), priority, estimate / weight, now);
    }
  }

  /**
   * Corrects a tenant's counter with what one of its admitted calls used: adds the difference
   * between the tokens used and the estimate counted at admission, divided by the weight. A tenant
   * the room forgot meanwhile is left alone.
   *
   * @param upstream the upstream's name
   * @param tenant the tenant
   * @param weight the weight its call was admitted with, finite and positive
   * @param estimate the estimate counted at admission, at least 0
   * @param actual the model tokens (input and output) the call used, at least 0
   * @throws IllegalArgumentException if an argument is null or out of range
   */
  public void settled(String upstream, String tenant, double weight, long estimate, long actual) {
    Args.notNull("upstream", upstream);
    Args.notNull("tenant", tenant);
    Args.positiveFinite("weight", weight);
    Args.notNegative("estimate", estimate);
    Args.notNegative("actual", actual);
    Line line = lines.get(upstream);
    if (line == null) {
      return;
    }
    synchronized (line) {
      Tenant t = line.tenants.get(tenant);
      if (t != null) {
        line.serve(t, (actual - estimate) / weight, now());
      }
    }
  }

  /**
   * Returns how many calls wait for an upstream in this room (with a shared order, the calls of
   * this instance; {@link UpstreamOrder#waiting} counts every instance's).
   *
   * @param upstream the upstream's name
   * @return the calls waiting, 0 for an upstream no call ever waited for
   */
  public int waiting(String upstream) {
    Line line = lines.get(upstream);
    if (line == null) {
      return 0;
    }
    synchronized (line) {
      return line.size;
    }
  }

  /**
   * Ends every wait, for a gateway that shuts down: each waiting call completes as if its longest
   * wait had passed (a call whose attempt is in flight, with that attempt's answer), and every
   * later call is decided at once, without waiting. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    AutoCloseable handle = listening;
    if (handle != null) {
      try {
        handle.close();
      } catch (Exception e) {
        LOG.log(System.Logger.Level.WARNING, "Removing the room's listener from the upstream order"
            + " failed (" + e.getClass().getName() + ")");
      }
    }
    for (Line line : lines.values()) {
      List<Waiter<?>> ended = new ArrayList<>();
      long retryMs;
      synchronized (line) {
        for (Band band : line.bands.values()) {
          for (Tenant t : band.backlogged.toArray(new Tenant[0])) {
            for (Waiter<?> w : t.queues.get(band.priority).toArray(new Waiter<?>[0])) {
              if (w == line.current) {
                w.expired = true;
              } else {
                ended.add(w);
              }
            }
          }
        }
        for (Waiter<?> w : ended) {
          line.remove(w);
        }
        retryMs = line.retryMs(now());
      }
      for (Waiter<?> w : ended) {
        left(line, w);
        giveUp(w, retryMs);
        ended(w, Ending.CLOSED);
      }
    }
  }

  /** The calls of one tenant waiting for an upstream (for tests). */
  int waiting(String upstream, String tenant) {
    Line line = lines.get(upstream);
    if (line == null) {
      return 0;
    }
    synchronized (line) {
      Tenant t = line.tenants.get(tenant);
      return t == null ? 0 : t.waiting;
    }
  }

  /** A tenant's counter on an upstream, or -1 when the room keeps none (for tests). */
  double counter(String upstream, String tenant) {
    Line line = lines.get(upstream);
    if (line == null) {
      return -1;
    }
    synchronized (line) {
      Tenant t = line.tenants.get(tenant);
      return t == null ? -1 : t.counter;
    }
  }

  /** The tenants whose counters an upstream keeps (for tests). */
  int tenants(String upstream) {
    Line line = lines.get(upstream);
    if (line == null) {
      return 0;
    }
    synchronized (line) {
      return line.tenants.size();
    }
  }

  private <X> Waiter<X> waiter(Call call, Attempt<X> attempt) {
    Args.notNull("call", call);
    Args.notNull("attempt", attempt);
    Waiter<X> w = new Waiter<>(call, attempt, now(), closed);
    // anyone but the room completing the stage (a cancel) makes the call leave the order
    w.future.whenComplete((x, failure) -> leave(w));
    return w;
  }

  private long now() {
    return ticker.read();
  }

  private Line line(String upstream) {
    return lines.computeIfAbsent(upstream, name -> new Line(
        maxWaitersByUpstream.getOrDefault(name, maxWaiters), ordered.get(name)));
  }

  /** Tries a call that no other call waits ahead of; an upstream deny makes it wait. */
  private <X> void first(Line line, Waiter<X> w) {
    CompletionStage<X> stage = start(w);
    stage.whenComplete((x, failure) -> {
      if (failure != null) {
        w.future.completeExceptionally(unwrap(failure));
        return;
      }
      Decision d = decisionOf(w, x);
      if (d == null) {
        return;
      }
      if (d.allowed()) {
        synchronized (line) {
          long now = now();
          line.direct(line.tenant(w.call.tenant(), now), w.call.priority(), w.service(), now);
        }
        if (!w.future.complete(x)) {
          abandon(w, x);
        }
      } else if (w.waits && d.reason() == Reason.UPSTREAM_LIMIT && d.retryable()) {
        w.last = x;
        enter(line, w, d.retryAfterMs());
      } else {
        w.future.complete(x);
      }
    });
  }

  /**
   * Puts a call in the order, or refuses it when the room is full; a call never tried that finds
   * nobody waiting any more is tried at once instead.
   *
   * @param deniedRetryMs the wait its upstream deny named, or 0 when it was never tried
   */
  private <X> void enter(Line line, Waiter<X> w, long deniedRetryMs) {
    Waiter<?> evicted = null;
    boolean entered = false;
    boolean tryNow = false;
    long retryMs;
    synchronized (line) {
      if (w.future.isDone()) {
        return;
      }
      long now = now();
      if (deniedRetryMs == 0 && line.size == 0) {
        tryNow = true;
      } else {
        if (line.size >= line.maxWaiters) {
          evicted = line.evictFor(w.call.tenant());
        }
        if (line.size < line.maxWaiters) {
          w.timeout = schedule(() -> expire(line, w), Math.max(0, w.deadline - now));
          entered = w.timeout != null;
        }
        if (entered) {
          line.enqueue(w, now);
          if (deniedRetryMs > 0) {
            arm(line, deniedRetryMs, now);
          }
        }
      }
      retryMs = line.retryMs(now);
    }
    if (tryNow) {
      first(line, w);
      return;
    }
    if (evicted != null) {
      left(line, evicted);
      giveUp(evicted, retryMs);
      ended(evicted, Ending.REFUSED);
    }
    if (entered && line.target != null) {
      join(line, w);
    }
    if (!entered) {
      giveUp(w, retryMs);
      ended(w, Ending.REFUSED);
    }
  }

  /** Completes a call that leaves without admission: with its last deny, or a fresh one. */
  private static <X> void giveUp(Waiter<X> w, long retryMs) {
    if (w.timeout != null) {
      w.timeout.cancel(false);
    }
    X last = w.last;
    if (last != null) {
      w.future.complete(last);
      return;
    }
    try {
      w.future.complete(w.attempt.denied(retryMs));
    } catch (RuntimeException | Error e) {
      w.future.completeExceptionally(e);
    }
  }

  /** Ends a call's wait once its longest wait passed (after its attempt, if one is in flight). */
  private <X> void expire(Line line, Waiter<X> w) {
    long retryMs;
    synchronized (line) {
      if (!w.queued) {
        return;
      }
      if (line.current == w) {
        w.expired = true;
        return;
      }
      line.remove(w);
      retryMs = line.retryMs(now());
    }
    left(line, w);
    giveUp(w, retryMs);
    ended(w, Ending.TIMED_OUT);
  }

  /** Takes a call out of the order when its stage was completed from outside. */
  private void leave(Waiter<?> w) {
    Line line = lines.get(w.call.upstream());
    if (line == null) {
      return;
    }
    synchronized (line) {
      if (!w.queued) {
        return;
      }
      line.remove(w);
    }
    left(line, w);
    if (w.timeout != null) {
      w.timeout.cancel(false);
    }
    ended(w, Ending.CANCELLED);
  }

  /** Runs a task later, or returns {@code null} (logged) when the scheduler refuses it. */
  private @Nullable Future<?> schedule(Runnable task, long delayNanos) {
    try {
      return scheduler.schedule(task, delayNanos);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "The waiting room's scheduler refused a task ("
          + e.getClass().getName() + "): calls that would wait are refused");
      return null;
    }
  }

  /** Schedules the upstream's retry {@code retryAfterMs} from now, unless one comes sooner. */
  private void arm(Line line, long retryAfterMs, long now) {
    long at = now + TimeUnit.MILLISECONDS.toNanos(Math.max(1, retryAfterMs));
    line.retryAt = at;
    if (line.size == 0 || line.retry != null && line.retryDue - at <= 0) {
      return;
    }
    if (line.retry != null) {
      line.retry.cancel(false);
    }
    line.retryDue = at;
    long generation = ++line.retries;
    line.retry = schedule(() -> {
      synchronized (line) {
        if (line.retries == generation) {
          line.retry = null;
        }
        line.handOff = true; // the upstream may admit: the call first elsewhere hears of it
      }
      pump(line);
    }, at - now);
  }

  /**
   * Tries the first call of the order, then the next while they are admitted; a call made while
   * an attempt is in flight marks it to be tried again right after.
   */
  private void pump(Line line) {
    if (line.target != null) {
      wake(line);
      return;
    }
    for (;;) {
      Waiter<?> w;
      synchronized (line) {
        if (line.attempting) {
          line.signalled = true;
          return;
        }
        w = line.head();
        if (w == null) {
          return;
        }
        line.attempting = true;
        line.signalled = false;
        line.current = w;
      }
      if (w.future.isDone()) { // it left since: never tried again
        dropLeft(line, w);
        continue;
      }
      Step step = new Step();
      retry(line, w, step);
      if (step.state.compareAndSet(Step.RUNNING, Step.RETURNED) || !step.next) {
        return; // the attempt completes later, and goes on from there
      }
    }
  }

  /** Ends the turn of a first call whose stage was completed from outside since it was chosen. */
  private void dropLeft(Line line, Waiter<?> w) {
    boolean removed;
    synchronized (line) {
      line.attempting = false;
      line.current = null;
      removed = w.queued;
      if (removed) {
        line.remove(w);
      }
    }
    if (removed) {
      left(line, w);
      if (w.timeout != null) {
        w.timeout.cancel(false);
      }
      ended(w, Ending.CANCELLED);
    }
  }

  private <X> void retry(Line line, Waiter<X> w, Step step) {
    start(w).whenComplete((x, failure) -> {
      step.next = finish(line, w, x, failure);
      if (!step.state.compareAndSet(Step.RUNNING, Step.DONE) && step.next) {
        pump(line);
      }
    });
  }

  /**
   * Applies the result of the first call's attempt (made as its waiting call of the store's order
   * when it has an id); tells whether to try the next one.
   */
  private <X> boolean finish(Line line, Waiter<X> w, @Nullable X x, @Nullable Throwable failure) {
    Decision d = null;
    if (failure == null) {
      try {
        d = Args.notNull("decision", w.attempt.decision(x));
      } catch (RuntimeException | Error e) {
        failure = e;
      }
    }
    boolean mine;
    boolean next;
    boolean ended;
    synchronized (line) {
      line.attempting = false;
      line.current = null;
      mine = w.queued;
      long now = now();
      if (failure != null || d.allowed()) {
        next = true;
        ended = true;
        line.handOff = true; // the next call may be another instance's: it hears of it
        if (mine) {
          if (failure == null) {
            line.serve(w.tenant, w.service(), now); // before it leaves: the counter it leaves with
          }
          line.remove(w);
        }
      } else if (d.reason() == Reason.UPSTREAM_LIMIT && d.retryable()) {
        w.last = x;
        arm(line, d.retryAfterMs(), now);
        next = line.signalled;
        ended = mine && (w.expired || now - w.deadline >= 0);
        if (ended) {
          line.remove(w);
        }
      } else {
        next = true;
        ended = true;
        line.handOff = true;
        if (mine) {
          line.remove(w);
        }
      }
    }
    if (ended && w.timeout != null) {
      w.timeout.cancel(false);
    }
    if (mine && ended) {
      // an admission with its id left the order in the same step, unless the store's failure
      // policy or local fallback admitted it without the order: leaving again is then a no-op
      left(line, w);
    }
    if (failure != null) {
      w.future.completeExceptionally(unwrap(failure));
    } else if (d.allowed()) {
      if (!w.future.complete(x)) {
        abandon(w, x);
      }
    } else if (ended) {
      w.future.complete(x);
    }
    if (mine && ended) {
      ended(w, failure != null ? Ending.FAILED : d.allowed() ? Ending.ADMITTED
          : d.reason() == Reason.UPSTREAM_LIMIT && d.retryable() ? Ending.TIMED_OUT
          : Ending.DENIED);
    }
    return next;
  }

  /**
   * Tries the call the store's order has first when it waits here, then the next while they are
   * admitted; a wake-up while a turn is in flight makes the room take another right after it.
   */
  private void wake(Line line) {
    for (;;) {
      boolean handOff;
      boolean empty;
      synchronized (line) {
        if (line.attempting) {
          line.signalled = true;
          return;
        }
        handOff = line.handOff;
        line.handOff = false;
        empty = line.size == 0;
        if (!empty) {
          line.attempting = true;
          line.signalled = false;
          line.heard = now();
        }
      }
      if (empty) { // nobody waits here: the order is not asked
        if (handOff) { // but the first call may wait on another instance
          capacityMayHaveFreed(line.target.name());
        }
        return;
      }
      Step step = new Step();
      turn(line, handOff, step);
      if (step.state.compareAndSet(Step.RUNNING, Step.RETURNED) || !step.next) {
        return; // the turn completes later, and goes on from there
      }
    }
  }

  /**
   * Asks the order whose turn it is and tries that call when it waits here; when the order cannot
   * answer, or holds none of the calls waiting, the room's own first call is tried. A call first
   * on another instance is left to it; after an admission or a retry here, the other instances
   * are told ({@link UpstreamOrder#signal}).
   */
  private void turn(Line line, boolean handOff, Step step) {
    UpstreamOrder shared = order;
    Upstream target = line.target;
    assert shared != null && target != null;
    CompletionStage<Optional<String>> asked;
    try {
      asked = shared.first(target);
    } catch (RuntimeException e) {
      asked = CompletableFuture.failedFuture(e);
    }
    asked.whenComplete((first, failure) -> {
      if (failure != null) {
        orderFailed(unwrap(failure));
      } else {
        orderDown.set(false);
      }
      Waiter<?> w;
      boolean elsewhere = false;
      boolean next = false;
      synchronized (line) {
        if (failure != null || first == null || first.isEmpty()) {
          w = line.head();
        } else {
          w = line.byId.get(first.get());
          elsewhere = w == null;
        }
        if (w == null) {
          line.attempting = false;
          next = line.signalled;
        } else {
          line.current = w;
        }
      }
      if (w == null) {
        turned(line, step, next);
        if (elsewhere && handOff) {
          capacityMayHaveFreed(target.name());
        }
      } else if (w.future.isDone()) { // it left since: never tried again
        dropLeft(line, w);
        turned(line, step, true);
      } else {
        attemptTurn(line, w, step);
      }
    });
  }

  private <X> void attemptTurn(Line line, Waiter<X> w, Step step) {
    String id = w.id;
    start(w, id).whenComplete((x, failure) -> turned(line, step, finish(line, w, x, failure)));
  }

  /** Ends a turn: the next one at once when {@code next}, else the poll keeps watch. */
  private void turned(Line line, Step step, boolean next) {
    if (!next) {
      poll(line);
    }
    step.next = next;
    if (!step.state.compareAndSet(Step.RUNNING, Step.DONE) && next) {
      wake(line);
    }
  }

  /** Puts a call that waits here in the store's order; the room's own order holds it meanwhile. */
  private <X> void join(Line line, Waiter<X> w) {
    UpstreamOrder shared = order;
    Upstream target = line.target;
    assert shared != null && target != null;
    CompletionStage<String> entered;
    try {
      UpstreamTurn turn = new UpstreamTurn(w.call.tenant(), w.call.weight(), w.call.priority(),
          w.call.estimate(), null);
      entered = shared.enter(target, turn, Duration.ofNanos(Math.max(MIN_WAIT, w.deadline - now())));
    } catch (RuntimeException e) {
      entered = CompletableFuture.failedFuture(e);
    }
    entered.whenComplete((id, failure) -> {
      if (failure != null || id == null) {
        orderFailed(failure == null ? new NullPointerException("enter gave no id") : unwrap(failure));
        poll(line);
        return;
      }
      boolean in;
      synchronized (line) {
        in = w.queued;
        if (in) {
          w.id = id;
          line.byId.put(id, w);
        }
      }
      if (in) { // tried when its line wakes: its deny's retry, a signal, or the poll
        poll(line);
      } else { // it left before the order answered
        leave(target, id);
      }
    });
  }

  /** The shortest wait a call enters the order with. */
  private static final long MIN_WAIT = TimeUnit.MILLISECONDS.toNanos(1);

  /**
   * Takes a call that left the room out of the store's order: one that left without admission,
   * or one admitted without the order (by the store's failure policy or local fallback); for one
   * the order's own admission took out, a no-op.
   */
  private void left(Line line, Waiter<?> w) {
    String id = w.id;
    Upstream target = line.target;
    if (id != null && target != null) {
      leave(target, id);
    }
  }

  private void leave(Upstream target, String id) {
    UpstreamOrder shared = order;
    assert shared != null;
    try {
      shared.leave(target, id).whenComplete((ignored, failure) -> {
        if (failure != null) {
          orderFailed(unwrap(failure)); // the order drops it once its wait has passed
        }
      });
    } catch (RuntimeException e) {
      orderFailed(e);
    }
  }

  /** Keeps a poll of the store's order armed while calls wait here. */
  private void poll(Line line) {
    synchronized (line) {
      if (line.size == 0 || line.poll != null || line.target == null) {
        return;
      }
      line.poll = schedule(() -> polled(line), Math.max(0, line.heard + pollNanos - now()));
    }
  }

  /** Wakes a line that heard nothing for the poll interval; else waits for the rest of it. */
  private void polled(Line line) {
    boolean quiet;
    synchronized (line) {
      line.poll = null;
      if (line.size == 0) {
        return;
      }
      quiet = now() - line.heard >= pollNanos;
    }
    if (quiet) {
      wake(line);
    }
    poll(line);
  }

  /** Logs that the store's order failed to answer, once until it answers again. */
  private void orderFailed(Throwable failure) {
    if (orderDown.compareAndSet(false, true)) {
      LOG.log(System.Logger.Level.WARNING, "The upstream order did not answer ("
          + failure.getClass().getName() + "): waiting calls are tried in this room's own order"
          + " until it answers again");
    }
  }

  /** Tells the listener how a call's wait ended; a listener that fails is logged. */
  private void ended(Waiter<?> w, Ending ending) {
    try {
      listener.waitEnded(w.call, ending, Math.max(0, now() - w.entered));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "A waiting room listener failed ("
          + e.getClass().getName() + ")");
    }
  }

  private static Throwable unwrap(Throwable failure) {
    return failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
  }

  private static <X> CompletionStage<X> start(Waiter<X> w) {
    return start(w, null);
  }

  /** Starts an attempt, as the waiting call {@code id} of the store's order when not null. */
  private static <X> CompletionStage<X> start(Waiter<X> w, @Nullable String id) {
    try {
      CompletionStage<X> stage = id != null ? w.attempt.attempt(id) : w.attempt.attempt();
      return stage != null ? stage
          : CompletableFuture.failedFuture(new NullPointerException("attempt() returned null"));
    } catch (RuntimeException | Error e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The attempt's decision, or {@code null} after failing the call when asking it failed. */
  private static <X> @Nullable Decision decisionOf(Waiter<X> w, X x) {
    try {
      return Args.notNull("decision", w.attempt.decision(x));
    } catch (RuntimeException | Error e) {
      w.future.completeExceptionally(e);
      return null;
    }
  }

  private static <X> void abandon(Waiter<X> w, X admitted) {
    try {
      w.attempt.abandon(admitted);
    } catch (RuntimeException | Error e) {
      LOG.log(System.Logger.Level.WARNING, "Giving back an admission whose caller left failed ("
          + e.getClass().getName() + ")");
    }
  }

  /**
   * Who waits for which upstream, and how long.
   *
   * @param upstream the upstream's name, not blank
   * @param tenant the tenant whose counter the call's tokens go to
   * @param weight the tenant's weight (from its plan): its counter grows by tokens divided by it;
   *     finite and positive
   * @param priority the call's priority class: a lower class always goes first
   * @param estimate the call's estimated model tokens (input and output), counted at admission;
   *     at least 0
   * @param maxWait the longest the call waits, from {@link #await}; zero for none
   */
  public record Call(
      String upstream, String tenant, double weight, int priority, long estimate,
      Duration maxWait) {

    /**
     * Validates the call.
     *
     * @throws IllegalArgumentException if a field is null or out of range
     */
    public Call {
      Args.notBlank("upstream", upstream);
      Args.notNull("tenant", tenant);
      Args.positiveFinite("weight", weight);
      Args.notNegative("estimate", estimate);
      Args.notNull("maxWait", maxWait);
      if (!maxWait.isZero()) {
        Args.nanos("maxWait", maxWait);
      }
    }
  }

  /**
   * Decides one call against its tenant's budgets and its upstream, as often as the room asks.
   *
   * @param <X> the result of one attempt (for the gateway, a {@link RateLimitOutcome})
   */
  public interface Attempt<X> {

    /**
     * Decides the call once: admitted and charged, or denied.
     *
     * @return a stage that completes with the result; it must not block the calling thread
     */
    CompletionStage<X> attempt();

    /**
     * Decides the call once as a waiting call of the store's shared order ({@link UpstreamOrder}):
     * its turn names the id the order gave it, so that the store may admit it ahead of the calls
     * after it. The room calls it only when it was given an order; by default it decides as
     * {@link #attempt()}.
     *
     * @param waiter the id {@link UpstreamOrder#enter} gave the call
     * @return a stage that completes with the result; it must not block the calling thread
     */
    default CompletionStage<X> attempt(String waiter) {
      return attempt();
    }

    /**
     * Returns the decision a result holds.
     *
     * @param result a result of {@link #attempt()}
     * @return its decision
     */
    Decision decision(X result);

    /**
     * Makes the deny of a call that leaves without having been tried (its longest wait passed or
     * the room was full while others waited ahead of it).
     *
     * @param retryAfterMs the milliseconds until the room next tries its upstream, at least 1
     * @return an upstream deny for the call
     */
    X denied(long retryAfterMs);

    /**
     * Gives back an admission whose caller left while its attempt was in flight: releases what it
     * reserved, as if the call ended having used nothing.
     *
     * @param admitted an admitted result of {@link #attempt()}
     */
    void abandon(X admitted);

    /**
     * Returns an attempt made of its four parts.
     *
     * @param <X> the result of one attempt
     * @param attempt decides the call once ({@link #attempt()})
     * @param decision the decision a result holds ({@link #decision})
     * @param denied makes the deny of a call never tried, from the wait in milliseconds ({@link
     *     #denied})
     * @param abandon gives back an admission whose caller left ({@link #abandon})
     * @return the attempt
     * @throws IllegalArgumentException if an argument is null
     */
    static <X> Attempt<X> of(Supplier<? extends CompletionStage<X>> attempt,
        Function<? super X, Decision> decision, LongFunction<? extends X> denied,
        Consumer<? super X> abandon) {
      Args.notNull("attempt", attempt);
      return inOrder(waiter -> attempt.get(), decision, denied, abandon);
    }

    /**
     * Returns an attempt made of its four parts whose decision takes the call's turn in the
     * store's shared order ({@link #attempt(String)}).
     *
     * @param <X> the result of one attempt
     * @param attempt decides the call once, given the id the order gave it, or {@code null} for a
     *     call not (yet) in the order ({@link #attempt()})
     * @param decision the decision a result holds ({@link #decision})
     * @param denied makes the deny of a call never tried, from the wait in milliseconds ({@link
     *     #denied})
     * @param abandon gives back an admission whose caller left ({@link #abandon})
     * @return the attempt
     * @throws IllegalArgumentException if an argument is null
     */
    static <X> Attempt<X> inOrder(
        Function<@Nullable String, ? extends CompletionStage<X>> attempt,
        Function<? super X, Decision> decision, LongFunction<? extends X> denied,
        Consumer<? super X> abandon) {
      Args.notNull("attempt", attempt);
      Args.notNull("decision", decision);
      Args.notNull("denied", denied);
      Args.notNull("abandon", abandon);
      return new Attempt<>() {
        @Override
        public CompletionStage<X> attempt() {
          return attempt.apply(null);
        }

        @Override
        public CompletionStage<X> attempt(String waiter) {
          return attempt.apply(waiter);
        }

        @Override
        public Decision decision(X result) {
          return decision.apply(result);
        }

        @Override
        public X denied(long retryAfterMs) {
          return denied.apply(retryAfterMs);
        }

        @Override
        public void abandon(X admitted) {
          abandon.accept(admitted);
        }
      };
    }
  }

  /** How a call's wait ended. */
  public enum Ending {
    /** An attempt admitted it after it waited. */
    ADMITTED,
    /** An attempt denied it for another reason than its upstream (its own budgets). */
    DENIED,
    /** Its longest wait passed; it got its upstream's deny. */
    TIMED_OUT,
    /** The room was full: it was refused a wait, or made room for a tenant waiting less. */
    REFUSED,
    /** Its stage was completed from outside (a client that disconnected). */
    CANCELLED,
    /** An attempt failed (the store could not decide). */
    FAILED,
    /** The room was closed. */
    CLOSED
  }

  /** Told how each wait ended, on the thread that ended it, outside the room's locks. */
  @FunctionalInterface
  public interface Listener {

    /**
     * Tells that a call that waited, or was refused a wait, is done waiting. Every such call is
     * told exactly once; a call decided at once without waiting is not told.
     *
     * @param call the call
     * @param ending how its wait ended
     * @param waitedNanos how long it was in the room, in nanoseconds of the room's ticker
     */
    void waitEnded(Call call, Ending ending, long waitedNanos);
  }

  /** Runs a task once, later. */
  @FunctionalInterface
  public interface Scheduler {

    /**
     * Runs {@code task} once, {@code delayNanos} from now, never on the calling thread.
     *
     * @param task the task; it never throws
     * @param delayNanos the delay in nanoseconds of the room's ticker, at least 0
     * @return a future whose {@link Future#cancel(boolean)} keeps the task from running
     */
    Future<?> schedule(Runnable task, long delayNanos);

    /**
     * Returns the scheduler that runs tasks on an executor, whose delays are those of {@link
     * Ticker#system()}. Every waiting call schedules its deadline, cancelled when it leaves early:
     * a {@link java.util.concurrent.ScheduledThreadPoolExecutor} should remove cancelled tasks
     * ({@code setRemoveOnCancelPolicy(true)}).
     *
     * @param executor the executor
     * @return the scheduler
     * @throws IllegalArgumentException if the executor is null
     */
    static Scheduler of(ScheduledExecutorService executor) {
      Args.notNull("executor", executor);
      return (task, delayNanos) -> executor.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    }
  }

  /** How an attempt started by {@link #pump} ended: inline, or later on another thread. */
  private static final class Step {
    static final int RUNNING = 0;
    static final int RETURNED = 1;
    static final int DONE = 2;
    final AtomicInteger state = new AtomicInteger(RUNNING);
    volatile boolean next;
  }

  /** One waiting call. */
  private static final class Waiter<X> {
    final Call call;
    final Attempt<X> attempt;
    /** Whether the call may wait at all (a longest wait above 0). */
    final boolean waits;
    /** The ticker's reading at which the wait ends. */
    final long deadline;
    final CompletableFuture<X> future = new CompletableFuture<>();
    /** The ticker's reading when the call came to the room. */
    final long entered;
    long seq;
    @Nullable Tenant tenant;
    volatile @Nullable X last;
    volatile @Nullable Future<?> timeout;
    /** Its id in the store's order, once it entered it; set under its line's lock. */
    volatile @Nullable String id;
    boolean queued;
    boolean expired;

    Waiter(Call call, Attempt<X> attempt, long now, boolean closed) {
      this.call = call;
      this.attempt = attempt;
      this.waits = !closed && !call.maxWait().isZero();
      this.entered = now;
      this.deadline = now + call.maxWait().toNanos();
    }

    double service() {
      return call.estimate() / call.weight();
    }
  }

  /** A tenant's counter and waiting calls on one upstream. */
  private static final class Tenant {
    final String key;
    final long id;
    double counter;
    long lastActive;
    int waiting;
    /** Its waiting calls by priority class, in the order they came; no empty entry. */
    final HashMap<Integer, LinkedHashSet<Waiter<?>>> queues =
        new HashMap<>(2);

    Tenant(String key, long id) {
      this.key = key;
      this.id = id;
    }

    long headSeq(int priority) {
      return queues.get(priority).iterator().next().seq;
    }
  }

  /** The tenants backlogged in one priority class, least counter first. */
  private static final class Band {
    final int priority;
    final TreeSet<Tenant> backlogged;
    double lastLeft;

    Band(int priority) {
      this.priority = priority;
      backlogged = new TreeSet<>((a, b) -> {
        int c = Double.compare(a.counter, b.counter);
        if (c == 0) {
          c = Long.compare(a.headSeq(priority), b.headSeq(priority));
        }
        return c != 0 ? c : Long.compare(a.id, b.id);
      });
    }
  }

  /** The waiting calls of one upstream and its tenants' counters; guarded by itself. */
  private final class Line {
    final int maxWaiters;
    /** The upstream whose calls wait in the store's order, or {@code null}: the room's own. */
    final @Nullable Upstream target;
    /** The calls waiting here that entered the store's order, by their ids there. */
    final HashMap<String, Waiter<?>> byId = new HashMap<>();
    /** The next poll of the store's order, while calls wait here. */
    @Nullable Future<?> poll;
    /** When the line last woke, on the room's ticker. */
    long heard;
    /** Whether the next wake-up should tell the other instances when their call is first. */
    boolean handOff;
    final TreeMap<Integer, Band> bands = new TreeMap<>();
    final HashMap<String, Tenant> tenants = new HashMap<>();
    int size;
    long seq;
    long tenantIds;
    long lastSweep = now();
    boolean attempting;
    boolean signalled;
    @Nullable Waiter<?> current;
    @Nullable Future<?> retry;
    /** Counts the retries scheduled, so that a retry that runs clears only its own future. */
    long retries;

    Line(int maxWaiters, @Nullable Upstream target) {
      this.maxWaiters = maxWaiters;
      this.target = target;
      this.heard = now();
    }
    long retryDue;
    /** When the upstream's last deny lapses (in the past before the first one). */
    long retryAt = now();

    Tenant tenant(String key, long now) {
      sweep(now);
      return tenants.computeIfAbsent(key, k -> new Tenant(k, tenantIds++));
    }

    /** The first call of the order, or {@code null}. */
    @Nullable Waiter<?> head() {
      for (var e : bands.entrySet()) {
        if (!e.getValue().backlogged.isEmpty()) {
          Tenant t = e.getValue().backlogged.first();
          return t.queues.get(e.getKey()).iterator().next();
        }
      }
      return null;
    }

    void enqueue(Waiter<?> w, long now) {
      Tenant t = tenant(w.call.tenant(), now);
      int p = w.call.priority();
      Band band = bands.computeIfAbsent(p, Band::new);
      var queue = t.queues.get(p);
      w.seq = seq++;
      w.tenant = t;
      w.queued = true;
      if (queue == null) {
        lift(t, band);
        queue = new LinkedHashSet<>();
        queue.add(w);
        t.queues.put(p, queue);
        band.backlogged.add(t);
      } else {
        queue.add(w);
      }
      t.waiting++;
      t.lastActive = now;
      size++;
    }

    void remove(Waiter<?> w) {
      Tenant t = w.tenant;
      int p = w.call.priority();
      Band band = bands.get(p);
      var queue = t.queues.get(p);
      band.backlogged.remove(t);
      queue.remove(w);
      w.queued = false;
      if (queue.isEmpty()) {
        t.queues.remove(p);
        band.lastLeft = t.counter;
      } else {
        band.backlogged.add(t);
      }
      t.waiting--;
      size--;
      String id = w.id;
      if (id != null) {
        byId.remove(id);
      }
      if (size == 0 && retry != null) {
        retry.cancel(false);
        retry = null;
      }
      if (size == 0 && poll != null) {
        poll.cancel(false);
        poll = null;
      }
    }

    /**
     * Counts a call admitted without waiting: as if it passed through the order at once, its
     * tenant, unless backlogged in the call's class, is first lifted like one that becomes
     * backlogged, then leaves it again.
     */
    void direct(Tenant t, int priority, double service, long now) {
      Band band = bands.computeIfAbsent(priority, Band::new);
      boolean backlogged = t.queues.containsKey(priority);
      if (!backlogged) {
        lift(t, band);
      }
      serve(t, service, now);
      if (!backlogged) {
        band.lastLeft = t.counter;
      }
    }

    /** Lifts a tenant not backlogged in the band to the band's floor. */
    private void lift(Tenant t, Band band) {
      double floor = band.backlogged.isEmpty() ? band.lastLeft : band.backlogged.first().counter;
      if (t.counter < floor) {
        detach(t);
        t.counter = floor;
        attach(t);
      }
    }

    void serve(Tenant t, double service, long now) {
      detach(t);
      t.counter += service;
      attach(t);
      t.lastActive = now;
    }

    /** Takes a tenant out of the bands it is backlogged in, before its counter changes. */
    private void detach(Tenant t) {
      for (Integer p : t.queues.keySet()) {
        bands.get(p).backlogged.remove(t);
      }
    }

    private void attach(Tenant t) {
      for (Integer p : t.queues.keySet()) {
        bands.get(p).backlogged.add(t);
      }
    }

    /**
     * Makes room for a call of {@code tenant} when the room is full: the latest call of the tenant
     * that waits with the most calls leaves, if that tenant waits with at least two more than
     * {@code tenant}; returns it, or {@code null} when the new call is refused.
     */
    @Nullable Waiter<?> evictFor(String tenant) {
      Tenant own = tenants.get(tenant);
      int mine = own == null ? 0 : own.waiting;
      Tenant most = null;
      for (Tenant t : tenants.values()) {
        if (most == null || t.waiting > most.waiting) {
          most = t;
        }
      }
      if (most == null || most.waiting < mine + 2) {
        return null;
      }
      Waiter<?> latest = null;
      for (var queue : most.queues.values()) {
        for (Waiter<?> w : queue) {
          if (w != current && (latest == null || w.seq > latest.seq)) {
            latest = w;
          }
        }
      }
      if (latest != null) {
        remove(latest);
      }
      return latest;
    }

    /** Milliseconds until the upstream's last deny lapses, at least 1. */
    long retryMs(long now) {
      long nanos = retryAt - now;
      return nanos <= 0 ? 1 : Math.max(1, (nanos + 999_999) / 1_000_000);
    }

    /** Forgets the tenants neither waiting nor served for the memory, at most once per memory. */
    private void sweep(long now) {
      if (now - lastSweep < memoryNanos) {
        return;
      }
      lastSweep = now;
      Iterator<Tenant> it = tenants.values().iterator();
      while (it.hasNext()) {
        Tenant t = it.next();
        if (t.waiting == 0 && now - t.lastActive >= memoryNanos) {
          it.remove();
        }
      }
    }
  }
}
