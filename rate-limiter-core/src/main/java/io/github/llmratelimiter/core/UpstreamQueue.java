package io.github.llmratelimiter.core;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;

/**
 * The fair order of one upstream's waiting calls in the in-memory store ({@link UpstreamOrder}):
 * the tenants' Virtual Token Counters, the waiting calls per priority class and tenant, and their
 * deadlines on the store's ticker (nanoseconds).
 *
 * <p>Every method is called with the monitor of the upstream's {@link UpstreamState} held, so that
 * the store's admission checks the order, dequeues the admitted call and counts it in the same
 * step as it decides the upstream. A call whose deadline is reached is dropped by the next method
 * that reads the order, before it reads it.
 *
 * <p>Memory: a tenant's counter is forgotten once the tenant has neither waited nor been served
 * for {@link #FORGET_AFTER} (a minute), and, beyond {@link #MAX_TENANTS} counters, the counters
 * idle the longest are forgotten first; a waiting call is held until it is admitted, leaves, or
 * its deadline is reached.
 */
final class UpstreamQueue {

  /** How long a tenant neither waiting nor served keeps its counter. */
  static final Duration FORGET_AFTER = Duration.ofMinutes(1);

  /** The most counters kept: the ones idle the longest go first beyond it. */
  static final int MAX_TENANTS = 100_000;

  /** The longest a call waits, so that its deadline never overflows the ticker. */
  private static final long LONGEST_WAIT = Duration.ofDays(365).toNanos();

  private static final long FORGET_NANOS = FORGET_AFTER.toNanos();

  /** A tenant's counter and the classes it has calls waiting in. */
  private static final class Tenant {
    final String name;
    double counter;
    /** When it last waited or was served: the order of {@link #tenants}. */
    long touched;
    /** Its lanes with waiting calls, one per priority class (usually none or one). */
    final List<Lane> lanes = new ArrayList<>(1);

    Tenant(String name) {
      this.name = name;
    }
  }

  /** A tenant's waiting calls in one priority class, in the order they entered. */
  private static final class Lane {
    final Tenant tenant;
    final PriorityClass home;
    final ArrayDeque<Waiter> calls = new ArrayDeque<>(2);

    Lane(Tenant tenant, PriorityClass home) {
      this.tenant = tenant;
      this.home = home;
    }

    long headSeq() {
      return calls.getFirst().seq();
    }
  }

  /** The lanes of one priority class, least counter first, and its last-left counter. */
  private static final class PriorityClass {
    /** By counter, then by the entry of the lane's earliest call (unique). */
    final TreeSet<Lane> backlog = new TreeSet<>(BY_COUNTER);
    final Map<String, Lane> lanes = new HashMap<>();
    /** The counter of the last tenant that left the backlog (0 before any left). */
    double lastLeft;
  }

  /** A waiting call: its id, its tenant's lane, its place in entry order, its deadline. */
  private record Waiter(String id, Lane lane, long seq, long deadline) {}

  /** Lanes by their tenant's counter, then by the entry of their earliest call (unique). */
  private static final Comparator<Lane> BY_COUNTER = (a, b) -> {
    int c = Double.compare(a.tenant.counter, b.tenant.counter);
    return c != 0 ? c : Long.compare(a.headSeq(), b.headSeq());
  };

  /** Waiting calls by deadline, then by entry (unique). */
  private static final Comparator<Waiter> BY_DEADLINE = (a, b) -> {
    int c = Long.signum(a.deadline() - b.deadline()); // ticker readings: compared by difference
    return c != 0 ? c : Long.compare(a.seq(), b.seq());
  };

  /** Per priority class, lowest (first served) first. */
  private final TreeMap<Integer, PriorityClass> classes = new TreeMap<>();
  /** The known tenants, the one touched longest ago first. */
  private final LinkedHashMap<String, Tenant> tenants = new LinkedHashMap<>();
  private final Map<String, Waiter> waiters = new HashMap<>();
  /** The waiting calls by deadline, then entry. */
  private final TreeSet<Waiter> deadlines = new TreeSet<>(BY_DEADLINE);
  private long entered;

  /** Puts call {@code id} of {@code turn} in the order at {@code now}, for {@code maxWait} ns. */
  void enter(String id, UpstreamTurn turn, long maxWait, long now) {
    expire(now);
    PriorityClass c = priorityClass(turn.priority());
    Tenant t = touch(turn.tenant(), now);
    Lane lane = c.lanes.get(t.name);
    if (lane == null) {
      lift(t, c);
      lane = new Lane(t, c);
      c.lanes.put(t.name, lane);
      t.lanes.add(lane);
      lane.calls.add(waiter(id, lane, maxWait, now));
      c.backlog.add(lane);
    } else {
      lane.calls.add(waiter(id, lane, maxWait, now)); // behind its first: no new place
    }
    forget(now);
  }

  private Waiter waiter(String id, Lane lane, long maxWait, long now) {
    Waiter w = new Waiter(id, lane, entered++, now + Math.min(maxWait, LONGEST_WAIT));
    waiters.put(id, w);
    deadlines.add(w);
    return w;
  }

  /** Takes call {@code id} out of the order; nothing happens for a call not in it. */
  void leave(String id, long now) {
    expire(now);
    Waiter w = waiters.get(id);
    if (w != null) {
      remove(w, now);
    }
  }

  /** The first waiting call's id, or null when none waits. */
  @Nullable String first(long now) {
    expire(now);
    for (PriorityClass c : classes.values()) {
      if (!c.backlog.isEmpty()) {
        return c.backlog.first().calls.getFirst().id();
      }
    }
    return null;
  }

  /** How many calls wait. */
  long waiting(long now) {
    expire(now);
    return waiters.size();
  }

  /** Whether the upstream's admission may admit {@code turn}: none waits, or it names the first. */
  boolean admits(UpstreamTurn turn, long now) {
    if (waiting(now) == 0) {
      return true;
    }
    return turn.waiter() != null && turn.waiter().equals(first(now));
  }

  /**
   * Counts a call the upstream admitted with {@code turn} (which {@link #admits}): a waiting call
   * is served and leaves the order; any other call (none waits then) passes through its class at
   * once, which moves only the class's last-left counter, to the greater of the tenant's counter
   * (0 when it has none) and the last-left counter, plus the call's service.
   */
  void admitted(UpstreamTurn turn, long now) {
    double served = turn.estimate() / turn.weight();
    Waiter w = turn.waiter() == null ? null : waiters.get(turn.waiter());
    if (w != null) {
      setCounter(w.lane().tenant, w.lane().tenant.counter + served);
      remove(w, now);
      touch(w.lane().tenant.name, now);
      return;
    }
    PriorityClass c = priorityClass(turn.priority());
    Tenant t = tenants.get(turn.tenant());
    c.lastLeft = Math.max(t == null ? 0 : t.counter, c.lastLeft) + served;
  }

  /** Corrects a known tenant's counter by what one of its calls used beyond its estimate. */
  void settled(UpstreamTurn turn, long actual, long now) {
    expire(now);
    Tenant t = tenants.get(turn.tenant());
    if (t != null) {
      setCounter(t, t.counter + (actual - turn.estimate()) / turn.weight());
      touch(t.name, now);
    }
  }

  /** How many tenants have a counter. */
  int tenants() {
    return tenants.size();
  }

  private PriorityClass priorityClass(int priority) {
    return classes.computeIfAbsent(priority, p -> new PriorityClass());
  }

  /** The tenant named {@code name}, created if need be, touched at {@code now} (moved last). */
  private Tenant touch(String name, long now) {
    Tenant t = tenants.remove(name);
    if (t == null) {
      t = new Tenant(name);
    }
    t.touched = now;
    tenants.put(name, t);
    return t;
  }

  /**
   * Lifts a tenant that joins class {@code c}'s backlog to the least counter backlogged there,
   * or, when none is, to the class's last-left counter: never down.
   */
  private static void lift(Tenant t, PriorityClass c) {
    double floor = c.backlog.isEmpty() ? c.lastLeft : c.backlog.first().tenant.counter;
    if (floor > t.counter) {
      setCounter(t, floor);
    }
  }

  /** Sets a tenant's counter, keeping each of its lanes in its place in its class. */
  private static void setCounter(Tenant t, double counter) {
    for (Lane l : t.lanes) {
      l.home.backlog.remove(l);
    }
    t.counter = counter;
    for (Lane l : t.lanes) {
      l.home.backlog.add(l);
    }
  }

  /** Takes a waiting call out; its tenant leaves the class's backlog with its last call. */
  private void remove(Waiter w, long now) {
    waiters.remove(w.id());
    deadlines.remove(w);
    Lane lane = w.lane();
    PriorityClass c = lane.home;
    if (lane.calls.getFirst() != w) {
      lane.calls.remove(w); // not its lane's first: the lane keeps its place
      return;
    }
    c.backlog.remove(lane);
    lane.calls.removeFirst();
    if (!lane.calls.isEmpty()) {
      c.backlog.add(lane);
      return;
    }
    Tenant t = lane.tenant;
    c.lanes.remove(t.name);
    t.lanes.remove(lane);
    c.lastLeft = t.counter;
    touch(t.name, now);
  }

  /** Drops the calls whose deadline is reached. */
  private void expire(long now) {
    while (!deadlines.isEmpty() && deadlines.first().deadline() - now <= 0) {
      remove(deadlines.first(), now);
    }
  }

  /**
   * Forgets the counters of tenants neither waiting nor served for {@link #FORGET_AFTER}, and the
   * ones idle the longest beyond {@link #MAX_TENANTS}; a waiting tenant is touched instead.
   */
  private void forget(long now) {
    for (int seen = 0, n = tenants.size(); seen < n && !tenants.isEmpty(); seen++) {
      Iterator<Tenant> it = tenants.values().iterator();
      Tenant oldest = it.next();
      if (now - oldest.touched < FORGET_NANOS && tenants.size() <= MAX_TENANTS) {
        return;
      }
      if (oldest.lanes.isEmpty()) {
        it.remove();
      } else {
        touch(oldest.name, now);
      }
    }
  }
}
