package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Reservation;
import java.lang.System.Logger.Level;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * What one instance's local fallback admitted while Redis did not answer, per root key (the hash
 * tag), until it is written back to Redis ({@code write-back.lua}): each admitted call with its
 * time on the store's ticker, its settlement when it was settled before the write-back, and
 * whether it still holds its slots.
 *
 * <p>Calls are handed over in batches of at most {@value #MAX_BATCH} per root key; a batch keeps
 * its id and content until Redis acknowledges it, so a batch sent again (a reply lost or late, two
 * threads flushing one root) is applied once. Once acknowledged, a call that holds slots or model
 * tokens is known by its Redis reservation, so its release and settlement reach Redis too.
 *
 * <p>Bounded: at most {@value #MAX_CALLS} calls wait in all; past that the oldest waiting call is
 * dropped (never written back), counted ({@link #dropped()}) and logged (once per {@value
 * #MAX_CALLS} dropped). The Redis reservations of calls written back are remembered until they
 * are released and settled, for a day at most (the longest lease timeout), and {@value
 * #MAX_WRITTEN} at most: past that the oldest is forgotten, and its release or settlement then
 * reaches only the fallback (its slot on Redis is renewed until its lease timeout).
 */
final class OutageJournal {

  private static final System.Logger LOG = System.getLogger(RedisRateLimitStore.class.getName());

  /** The calls that wait to be written back, at most, in all. */
  static final int MAX_CALLS = 65_536;
  /** The calls of one batch (one script call), at most. */
  static final int MAX_BATCH = 256;
  /**
   * How long the Redis reservation of a call written back is remembered: a day, the longest lease
   * timeout ({@link ConcurrencyLimit#MAX_LEASE}).
   */
  static final long REMEMBER_NANOS = ConcurrencyLimit.MAX_LEASE.toNanos();
  /** The calls written back whose Redis reservations are remembered, at most. */
  static final int MAX_WRITTEN = 2 * MAX_CALLS;

  /** A call the fallback admitted. */
  static final class Admitted {
    final LuaRateLimitStore.Call call;
    /** The fallback's reservation. */
    final Reservation made;
    /** When it was admitted, on the store's ticker. */
    final long at;
    /** What it used, once settled before it was written back; else null. */
    @Nullable Consumption settled;
    /** Whether its slots were released before it was written back. */
    boolean released;
    /** The reservation on Redis once written back (with an id numbered there), else null. */
    @Nullable Reservation onRedis;
    boolean batched;
    /** The settlement and the release as its batch holds them (frozen when it is formed). */
    @Nullable Consumption sentSettled;
    boolean sentReleased;
    /** Until when its Redis reservation is remembered, on the store's ticker. */
    long until;

    Admitted(LuaRateLimitStore.Call call, Reservation made, long at) {
      this.call = call;
      this.made = made;
      this.at = at;
    }

    /** Whether Redis numbers an id for it: it holds model tokens or slots. */
    boolean numbered() {
      return made.id() != 0;
    }

    boolean holdsSlots() {
      return made.holdsSlots() && !released;
    }
  }

  /**
   * What a call written back needs on Redis: a settlement ({@code settled} not null), a release,
   * or the renewal of its slots.
   */
  record Follow(Reservation onRedis, @Nullable Consumption settled, boolean release,
      boolean renew) {}

  /** One script call's worth of one root's calls, with the id that makes it idempotent. */
  record Batch(String root, String id, List<Admitted> calls) {}

  /** A reservation the fallback made, by the key of its first level and its id there. */
  private record Made(String root, long id, Budget first) {
    static Made of(Reservation r) {
      return new Made(r.keys().get(0), r.id(), r.levels().get(0));
    }
  }

  /** One root's calls waiting, in the order admitted, and its batch on its way. */
  private static final class Root {
    final ArrayDeque<Admitted> waiting = new ArrayDeque<>();
    @Nullable Batch sent;
  }

  private final HashMap<String, Root> roots = new HashMap<>();
  /** Every waiting call in the order admitted (batched ones are skipped when met). */
  private final ArrayDeque<Admitted> order = new ArrayDeque<>();
  /** The calls waiting or on their way, by their fallback reservation (those that hold one). */
  private final HashMap<Made, Admitted> byReservation = new HashMap<>();
  /** Calls written back that hold a Redis reservation, oldest first (see the class comment). */
  private final LinkedHashMap<Made, Admitted> writtenBack = new LinkedHashMap<>();
  private int waiting;
  private volatile int pendingRoots;
  private final AtomicLong dropped = new AtomicLong();

  /** Records a call the fallback admitted at {@code at} (the store's ticker). */
  synchronized void add(LuaRateLimitStore.Call call, Reservation made, long at) {
    Admitted a = new Admitted(call, made, at);
    Root root = roots.computeIfAbsent(call.keys().get(0), k -> new Root());
    root.waiting.addLast(a);
    order.addLast(a);
    if (made.id() != 0) {
      byReservation.put(Made.of(made), a);
    }
    waiting++;
    while (waiting > MAX_CALLS) {
      drop();
    }
    while (!order.isEmpty() && order.peekFirst().batched) {
      order.pollFirst();
    }
    if (order.size() > 2 * MAX_CALLS) { // batched calls behind an older waiting one
      order.removeIf(c -> c.batched);
    }
    pendingRoots = roots.size();
  }

  private void drop() {
    Admitted oldest = order.pollFirst();
    while (oldest != null && oldest.batched) {
      oldest = order.pollFirst();
    }
    if (oldest == null) {
      return;
    }
    String key = oldest.call.keys().get(0);
    Root root = roots.get(key);
    root.waiting.remove(oldest);
    byReservation.remove(Made.of(oldest.made));
    if (root.waiting.isEmpty() && root.sent == null) {
      roots.remove(key);
      forgetIfEmpty();
    }
    waiting--;
    if (dropped.incrementAndGet() % MAX_CALLS == 1) {
      LOG.log(Level.WARNING, "Redis rate-limit store outage journal full ({0} calls): the oldest"
          + " calls the local fallback admitted are not written back to Redis", MAX_CALLS);
    }
  }

  /** Notes the number of roots left; the order of calls is dropped with the last. */
  private void forgetIfEmpty() {
    pendingRoots = roots.size();
    if (roots.isEmpty()) {
      order.clear();
    }
  }

  /** Whether some call waits to be written back. */
  boolean isEmpty() {
    return pendingRoots == 0;
  }

  /** The root keys with calls waiting to be written back. */
  synchronized List<String> roots() {
    return new ArrayList<>(roots.keySet());
  }

  /** The calls waiting or on their way to Redis, in all (for tests). */
  synchronized int size() {
    int n = 0;
    for (Root r : roots.values()) {
      n += r.waiting.size() + (r.sent == null ? 0 : r.sent.calls().size());
    }
    return n;
  }

  /** The calls dropped because the journal was full. */
  long dropped() {
    return dropped.get();
  }

  /**
   * The next batch of a root: the one on its way (sent again as it is, with its id), else a new
   * one of the oldest calls waiting; null when none waits.
   */
  synchronized @Nullable Batch next(String key) {
    Root root = roots.get(key);
    if (root == null) {
      return null;
    }
    if (root.sent == null) {
      List<Admitted> calls = new ArrayList<>(Math.min(MAX_BATCH, root.waiting.size()));
      while (calls.size() < MAX_BATCH && !root.waiting.isEmpty()) {
        Admitted a = root.waiting.pollFirst();
        a.batched = true;
        a.sentSettled = a.settled;
        a.sentReleased = a.released;
        waiting--;
        calls.add(a);
      }
      if (calls.isEmpty()) {
        roots.remove(key);
        forgetIfEmpty();
        return null;
      }
      // 128 random bits from ThreadLocalRandom: unique enough for a marker kept a day, and never
      // blocking (UUID.randomUUID() reads the system's entropy on its first use, and this may run on
      // Redis's event loop)
      ThreadLocalRandom random = ThreadLocalRandom.current();
      String id = new UUID(random.nextLong(), random.nextLong()).toString();
      root.sent = new Batch(key, id, List.copyOf(calls));
    }
    return root.sent;
  }

  /**
   * Takes Redis's acknowledgement of a batch: the ids it numbered, in order, for the calls that
   * are numbered one. Returns the calls written back that need more on Redis: a settlement or a
   * release that came after their batch was formed, or slots to renew; empty when the batch was
   * acknowledged already.
   */
  synchronized List<Follow> acknowledged(Batch batch, long[] ids, long now) {
    Root root = roots.get(batch.root());
    if (root == null || root.sent != batch) {
      return List.of();
    }
    root.sent = null;
    if (root.waiting.isEmpty()) {
      roots.remove(batch.root());
      forgetIfEmpty();
    }
    List<Follow> follow = new ArrayList<>();
    int k = 0;
    for (Admitted a : batch.calls()) {
      if (!a.numbered() || k >= ids.length) {
        continue;
      }
      Made made = Made.of(a.made);
      byReservation.remove(made);
      a.onRedis = onRedis(a, ids[k++]);
      boolean settle = a.settled != null && a.sentSettled == null;
      boolean release = a.released && !a.sentReleased && a.made.holdsSlots();
      boolean renew = a.holdsSlots();
      if (settle || release || renew) {
        follow.add(new Follow(a.onRedis, settle ? a.settled : null, release, renew && !release));
      }
      if (a.settled == null || a.holdsSlots()) { // a settlement or a release may still come
        a.until = now + REMEMBER_NANOS;
        writtenBack.put(made, a);
      }
    }
    Iterator<Admitted> oldest = writtenBack.values().iterator();
    while (oldest.hasNext()) {
      Admitted a = oldest.next();
      if (writtenBack.size() <= MAX_WRITTEN && now - a.until < 0) {
        break;
      }
      oldest.remove();
    }
    return follow;
  }

  /** The reservation Redis holds of a call written back, numbered {@code id} there. */
  private static Reservation onRedis(Admitted a, long id) {
    LuaRateLimitStore.Call c = a.call;
    QuotaFrame q = c.quotas();
    return new Reservation(a.made.decision(), c.levels(), c.keys(), c.estimate(), id, 0, 0,
        q == null ? 0 : q.estimate.spend(), q == null ? 0 : q.nowMs, List.of());
  }

  /**
   * Notes the settlement of a reservation the fallback made: kept with its call until it is
   * written back, so that the write-back charges what was used; returns its reservation on Redis
   * when it was written back already (the caller settles that there too), else null.
   */
  synchronized @Nullable Reservation settled(Reservation made, Consumption actual) {
    Made key = Made.of(made);
    Admitted a = byReservation.get(key);
    if (a != null) {
      a.settled = actual; // waiting: written back settled; on its way: settled once acknowledged
      return null;
    }
    Admitted done = writtenBack.get(key);
    if (done == null || done.settled != null) {
      return null;
    }
    done.settled = actual;
    if (!done.holdsSlots()) {
      writtenBack.remove(key);
    }
    return done.onRedis;
  }

  /**
   * Notes the release of a reservation the fallback made: its slots are not written back while it
   * waits; returns its reservation on Redis when it was written back already (the caller releases
   * it there too), else null.
   */
  synchronized @Nullable Reservation released(Reservation made) {
    Made key = Made.of(made);
    Admitted a = byReservation.get(key);
    if (a != null) {
      a.released = true; // waiting: its slots not written; on its way: released once acknowledged
      return null;
    }
    Admitted done = writtenBack.get(key);
    if (done == null || done.released || !done.made.holdsSlots()) {
      return null;
    }
    done.released = true;
    if (done.settled != null || !done.made.reserved()) {
      writtenBack.remove(key);
    }
    return done.onRedis;
  }
}
