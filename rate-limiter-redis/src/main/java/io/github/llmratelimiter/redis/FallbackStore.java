package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.MaintenanceScheduler;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * What one gateway instance decides on its own while Redis does not answer ({@link
 * FailurePolicy#LOCAL_FALLBACK}): each budget's share for this instance, on an in-memory store that
 * already holds what this instance admitted through Redis.
 *
 * <p>With {@code N} live instances (the count of their heartbeats in Redis, as last seen), the
 * share of a window limit {@code L} is {@code s = max(1, floor(L / N))}; of a bucket, its capacity
 * and refill divided by {@code N} (at least one permit); of a model-token limit, {@code max(1,
 * floor(limit / N))}; of a concurrency limit, {@code max(1, floor(limit / N))}, with the same
 * lease. A variant (a plan's limits) is scaled alike, as a variant of the scaled defaults. While
 * Redis answers, every call Redis admits is also charged here ({@link #mirror}), so a switch to
 * the fallback continues from what this instance admitted, never from an empty state. Each
 * instance then admits, in any window, at most its share less what it admitted through Redis in
 * that window; the bound this gives for all instances together is stated in {@link
 * FailurePolicy#LOCAL_FALLBACK}. A mirrored call holds its slots here until its Redis
 * reservation is released ({@link #release}) or its lease expires, so the share counts this
 * instance's calls in flight, through Redis or not.
 *
 * <p>Shares are kept for {@code N - 1}, {@code N} and {@code N + 1} instances at once, so that an
 * instance joining or leaving (a rolling deployment) leaves a share that already holds this
 * instance's admissions. The mirror charges the model-token estimate of a call and never its
 * usage, which can only make the fallback stricter.
 *
 * <p>Every call this fallback admits is recorded in its {@link OutageJournal} until it is written
 * back to Redis ({@link WriteBack}), and a settlement or release of it reaches Redis too once it
 * was written back.
 *
 * <p>Quotas are decided here too, on each share's in-memory store, over the calendar of the same
 * wall clock as Redis's calls: a quota's share is {@code max(1, floor(limit / N))}, and the mirror
 * charges it with each call's estimate as Redis admitted it. What this means:
 * <ul>
 *   <li>the counters here start from what this instance admitted through Redis since it started
 *       (estimates, never the settled amounts), not from the key's use across instances: a key
 *       that used most of its period through other instances may be admitted up to the share
 *       again on each instance during an outage;
 *   <li>the mirror never settles what it charges: its estimates of model tokens and cost stay in
 *       flight in the shares, so a share they fill denies with the short wait of calls in flight
 *       rather than until its period's end, and its thresholds count only the calls this fallback
 *       admitted and saw settled;
 *   <li>what is spent during an outage (the calls this fallback admits and their settlements) is
 *       written back to Redis's counters once Redis answers again, with the rest of the journal
 *       (below), in the period each call was charged in;
 *   <li>thresholds are reported by this instance's share, against the share's limit, once per
 *       share and period: they may repeat, or differ from, what Redis reported.
 * </ul>
 */
final class FallbackStore implements AutoCloseable {

  /** The keys a share's store tracks per budget at most (the in-memory store's default). */
  private static final long MAX_KEYS = 1_000_000L;
  /** How often a share's store is maintained (the in-memory store's default). */
  private static final Duration MAINTENANCE_INTERVAL = Duration.ofSeconds(1);

  private final Ticker ticker;
  /** The calendar of quota periods. */
  private final InstantSource wallClock;
  private final long retryMs;
  /** The live instance count as last seen; 0 until the first heartbeat is answered. */
  private volatile int instances;
  private volatile Share[] shares;
  /**
   * The slots mirrored calls hold in the shares, by their Redis reservation: Redis numbers the
   * reservations of each root key apart, so an id names a reservation only with its root key.
   */
  private final ConcurrentHashMap<MirrorKey, Mirrored> mirrored = new ConcurrentHashMap<>();
  /** What this fallback admitted, until it is written back to Redis. */
  private final OutageJournal journal = new OutageJournal();
  /** The size of {@link #mirrored} at which the next mirror drops the entries of expired leases. */
  private volatile int sweepAt = SWEEP_MIN;
  private static final int SWEEP_MIN = 1024;

  /** A Redis reservation: its first level's key and its id, numbered per such key. */
  private record MirrorKey(String rootKey, long id) {
    static MirrorKey of(Reservation reservation) {
      return new MirrorKey(reservation.keys().get(0), reservation.id());
    }
  }

  /** The reservations a mirrored call holds slots with, one per share, until its lease expires. */
  private record Mirrored(Share[] shares, Reservation[] held, long expiresAt) {}

  FallbackStore(Ticker ticker, long retryMs) {
    this(ticker, InstantSource.system(), retryMs);
  }

  FallbackStore(Ticker ticker, InstantSource wallClock, long retryMs) {
    this.ticker = ticker;
    this.wallClock = wallClock;
    this.retryMs = retryMs;
    this.shares = new Share[] {new Share(1, ticker, wallClock), new Share(2, ticker, wallClock)};
  }

  /** One divisor's store and scaled budgets. */
  private static final class Share {
    final int divisor;
    final RateLimitStore store;
    final ConcurrentHashMap<Budget, Budget> budgets = new ConcurrentHashMap<>();

    Share(int divisor, Ticker ticker, InstantSource wallClock) {
      this.divisor = divisor;
      this.store = RateLimitStore.inMemory(ticker, wallClock, MAX_KEYS,
          MaintenanceScheduler.every(MAINTENANCE_INTERVAL));
    }

    List<Budget> scale(List<Budget> levels) {
      if (divisor == 1) {
        return levels;
      }
      List<Budget> scaled = new ArrayList<>(levels.size());
      for (Budget b : levels) {
        scaled.add(scaled(b));
      }
      return scaled;
    }

    /** The share of an upstream: its limits scaled as a budget's are. */
    Upstream scaled(Upstream upstream) {
      if (divisor == 1) {
        return upstream;
      }
      Budget b = scaled(upstream.budget());
      return new Upstream(upstream.name(), b.window(), b.modelTokens(), b.concurrency());
    }

    /**
     * The share of a provider's report: its limits and remaining counts divided as the share's
     * limits are (rounded down: the shares never admit more than the report leaves).
     */
    ProviderReport scaled(ProviderReport r) {
      if (divisor == 1) {
        return r;
      }
      return new ProviderReport(share(r.limitRequests(), 1), share(r.remainingRequests(), 0),
          r.resetRequests(), share(r.limitTokens(), 1), share(r.remainingTokens(), 0),
          r.resetTokens(), r.retryAfter());
    }

    private @Nullable Long share(@Nullable Long value, long least) {
      return value == null ? null : Math.max(least, value / divisor);
    }

    /** The share of a budget; of a variant, the same variant of the share of its defaults. */
    private Budget scaled(Budget b) {
      Budget known = budgets.get(b);
      if (known != null) {
        return known;
      }
      Budget d = b.isVariant() ? scaled(b.defaults()) : null;
      WindowLimit w = b.window();
      BucketLimit k = b.bucket();
      ModelTokenLimit m = b.modelTokens();
      ConcurrencyLimit c = b.concurrency();
      List<QuotaLimit> quotas = new ArrayList<>(b.quotas().size());
      for (QuotaLimit q : b.quotas()) {
        quotas.add(q.withLimit(Math.max(1, q.limit() / divisor)));
      }
      Budget share = new Budget(b.name(),
          w == null ? null : new WindowLimit(Math.max(1, w.limit() / divisor), w.window()),
          k == null ? null : new BucketLimit(
              Math.max(Math.min(1, k.capacity()), k.capacity() / divisor),
              k.refillPerSecond() / divisor),
          m == null ? null : new ModelTokenLimit(Math.max(1, m.limit() / divisor), m.window()),
          c == null ? null
              : new ConcurrencyLimit(Math.max(1, c.limit() / divisor), c.leaseTimeout()),
          quotas, null);
      if (d != null) {
        share = d.variant(share.window(), share.bucket(), share.modelTokens(), share.concurrency(),
            share.quotas());
      }
      Budget raced = budgets.putIfAbsent(b, share);
      return raced != null ? raced : share;
    }

    Reservation decide(LuaRateLimitStore.Call call) {
      List<Budget> levels = scale(call.levels());
      QuotaFrame quotas = call.quotas();
      Upstream upstream = call.upstream();
      if (upstream != null) {
        int n = call.callerLevels();
        return store.reserve(levels.subList(0, n), call.keys().subList(0, n), call.cost(),
            quotas != null ? quotas.estimate : new Consumption(1, call.estimate(), 0),
            call.composition(), scaled(upstream));
      }
      if (quotas != null) {
        return store.reserve(levels, call.keys(), call.cost(), quotas.estimate,
            call.composition());
      }
      if (call.reserve()) {
        return store.reserve(levels, call.keys(), call.cost(), call.estimate(), call.composition());
      }
      Decision d = store.acquire(levels, call.keys(), call.cost(), call.composition());
      return new Reservation(d, call.levels(), call.keys(), call.estimate(), 0, 0, 0);
    }
  }

  /** The live instance count as last seen; the shares follow it. */
  synchronized void instances(int count) {
    int n = Math.max(1, count);
    if (n == instances) {
      return;
    }
    Share[] kept = shares;
    Share[] next = new Share[n == 1 ? 2 : 3];
    for (int i = 0; i < next.length; i++) {
      int divisor = Math.max(1, n - 1) + i;
      for (Share s : kept) {
        if (s.divisor == divisor) {
          next[i] = s;
        }
      }
      if (next[i] == null) {
        next[i] = new Share(divisor, ticker, wallClock);
      }
    }
    shares = next;
    instances = n;
    for (Share s : kept) {
      if (!List.of(next).contains(s)) {
        s.store.close();
      }
    }
  }

  /** The live instance count the shares are taken for; 0 while unknown. */
  int instances() {
    return instances;
  }

  /**
   * Charges a call that Redis admitted to every share, whatever each decides; the slots it takes
   * there are held until {@code admitted} is released or their lease expires.
   *
   * @return what this instance's own share decided (a deny charged that share nothing it would
   *     not have charged on its own)
   */
  Decision mirror(LuaRateLimitStore.Call call, Reservation admitted) {
    Share[] current = shares;
    int own = Math.max(1, instances);
    Decision decided = admitted.decision();
    Reservation[] held = admitted.holdsSlots() ? new Reservation[current.length] : null;
    for (int i = 0; i < current.length; i++) {
      Reservation r = current[i].decide(call);
      if (current[i].divisor == own) {
        decided = r.decision();
      }
      if (held != null) {
        held[i] = r;
      }
    }
    if (held != null) {
      long lease = 0;
      for (Budget b : call.levels()) {
        ConcurrencyLimit c = b.concurrency();
        lease = Math.max(lease, c == null ? 0 : c.leaseTimeout().toNanos());
      }
      long now = ticker.read();
      mirrored.put(MirrorKey.of(admitted), new Mirrored(current, held, now + lease));
      if (mirrored.size() >= sweepAt) {
        mirrored.values().removeIf(m -> now - m.expiresAt() >= 0);
        sweepAt = Math.max(SWEEP_MIN, 2 * mirrored.size());
      }
    }
    return decided;
  }

  /**
   * The answer to a call Redis admitted and this instance's share denied ({@code decided}) while
   * Redis is held to the share after an outage: the share's deny, or a retryable {@link
   * Reason#STORE_UNAVAILABLE} deny when the call fits the limit but not the share.
   */
  Reservation heldBack(LuaRateLimitStore.Call call, Decision decided) {
    if (decided.reason() == Reason.COST_EXCEEDS_CAPACITY) {
      return unavailable(call, decided.level());
    }
    return new Reservation(decided, call.levels(), call.keys(), call.estimate(), 0, 0, 0);
  }

  /**
   * Gives back the slots of a reservation: those its mirror holds in the shares (a reservation
   * Redis made), or its own on the share that made it (one this fallback made). Idempotent.
   *
   * @return the reservation Redis holds of one this fallback made and wrote back (to release
   *     there too), else null
   */
  @Nullable Reservation release(Reservation reservation) {
    if (LuaRateLimitStore.fromRedis(reservation)) {
      Mirrored m = mirrored.remove(MirrorKey.of(reservation));
      if (m != null) {
        for (int i = 0; i < m.held().length; i++) {
          m.shares()[i].store.release(m.held()[i]);
        }
      }
      return null;
    }
    Share made = madeBy(reservation);
    if (made != null) {
      made.store.release(reservation);
    }
    return journal.released(reservation);
  }

  /** The slots mirrored calls hold in the shares (for tests). */
  int mirroredCalls() {
    return mirrored.size();
  }

  /**
   * Decides a call on this instance's share. A cost or estimate that fits the budget but not the
   * share is a retryable {@link Reason#STORE_UNAVAILABLE} deny, not a final one; so is every call
   * while the live instance count is unknown (Redis never answered a heartbeat of this instance),
   * since any share taken then could exceed what the other instances leave.
   */
  Reservation decide(LuaRateLimitStore.Call call) {
    if (instances == 0) {
      return unavailable(call, call.levels().get(0).name());
    }
    Reservation r = current().decide(call);
    if (r.decision().reason() == Reason.COST_EXCEEDS_CAPACITY) {
      return unavailable(call, r.decision().level());
    }
    if (r.decision().allowed()) {
      journal.add(call, r, ticker.read());
    }
    return r;
  }

  /** What this fallback admitted that waits to be written back to Redis. */
  OutageJournal journal() {
    return journal;
  }

  private Reservation unavailable(LuaRateLimitStore.Call call, String level) {
    Decision d = Decision.retryableDeny(Reason.STORE_UNAVAILABLE, 0, retryMs, 0, level);
    return new Reservation(d, call.levels(), call.keys(), call.estimate(), 0, 0, 0);
  }

  /** Reconciles a reservation on the share that made it; one of a share since dropped is lost. */
  void reconcile(Reservation reservation, long actualModelTokens) {
    Share made = madeBy(reservation);
    if (made != null) {
      made.store.reconcile(reservation, actualModelTokens);
    }
  }

  /**
   * Settles a reservation (model tokens and quotas) on the share that made it; one of a share
   * since dropped is lost.
   *
   * @return the reservation Redis holds of it when it was written back (to settle there too),
   *     else null
   */
  @Nullable Reservation reconcile(Reservation reservation, Consumption actual) {
    Share made = madeBy(reservation);
    if (made != null) {
      made.store.reconcile(reservation, actual);
    }
    return journal.settled(reservation, actual);
  }

  /** The share whose store made a reservation (its levels are that share's budgets), if kept. */
  private @Nullable Share madeBy(Reservation reservation) {
    Budget first = reservation.levels().get(0);
    Share made = null;
    for (Share s : shares) {
      if (s.divisor == 1 ? made == null : s.budgets.containsValue(first)) {
        made = s;
      }
    }
    return made;
  }

  /** Applies a provider's report to every share, scaled as each share scales the upstream. */
  void report(Upstream upstream, ProviderReport report) {
    for (Share s : shares) {
      s.store.report(s.scaled(upstream), s.scaled(report));
    }
  }

  /** Where an upstream stands on this instance's share. */
  UpstreamStatus upstreamStatus(Upstream upstream) {
    Share own = current();
    return own.store.upstreamStatus(own.scaled(upstream));
  }

  /** The store of this instance's own share, for monitoring during an outage. */
  RateLimitStore store() {
    return current().store;
  }

  /** Forgets the state of every share and every mirrored call. */
  void resetAll() {
    for (Share s : shares) {
      s.store.administration().orElseThrow().resetAll();
    }
    mirrored.clear();
  }

  /** The budget as this instance's share scales it. */
  Budget scaled(Budget budget) {
    return current().scale(List.of(budget)).get(0);
  }

  private Share current() {
    int n = Math.max(1, instances);
    for (Share s : shares) {
      if (s.divisor == n) {
        return s;
      }
    }
    throw new IllegalStateException("no share for " + n + " instances");
  }

  @Override
  public void close() {
    for (Share s : shares) {
      s.store.close();
    }
  }
}
