package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.Ticker;
import java.time.Duration;
import java.util.Iterator;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The default {@link RateLimitPlanResolver}: a key's plan is the assignment the store keeps ({@link
 * PlanAssignments#assignedPlan}), else the default plan, read through a bounded local cache so that
 * a decision in steady state asks the store nothing more.
 *
 * <ul>
 *   <li>A plan read less than {@code refresh} ago (on the injected {@link Ticker}) is used as it is;
 *       one read more than {@code refresh / 2} ago is read again in the background, so a key in use
 *       never waits for its plan. A plan read {@code refresh} ago or more is never used: every
 *       instance sees an assignment made anywhere within {@code refresh} of it.
 *   <li>A key not cached (or whose plan is too old) is read on the calling thread by {@link #plan},
 *       and by {@link #planAsync} through the store's asynchronous read ({@link
 *       PlanAssignments#assignedPlanAsync}: one command, no thread of its own, nothing queued here),
 *       which never blocks its caller; at most one read per key is in flight.
 *   <li>While the store cannot answer, a key keeps the plan last read (or gets the default plan
 *       when none was), and is read again at its next call.
 *   <li>An assignment names a configured plan; one that no longer does (the configuration changed)
 *       counts as the default plan.
 *   <li>At most {@code maxKeys} keys are cached; past it an arbitrary one is dropped.
 * </ul>
 */
final class CachingPlanResolver implements RateLimitPlanResolver {

  private static final System.Logger LOG = System.getLogger(CachingPlanResolver.class.getName());

  private final PlanAssignments store;
  private final RateLimitPolicies policies;
  private final Ticker ticker;
  private final long refreshNanos;
  private final int maxKeys;
  private final ConcurrentHashMap<String, Entry> cache = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, CompletableFuture<Entry>> loading = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /**
   * A key's plan as read at {@code readAt}.
   *
   * @param plan the plan's name, one of the configured plans
   * @param assigned whether it was assigned (rather than the default)
   * @param readAt the ticker's reading before the store was asked
   */
  private record Entry(String plan, boolean assigned, long readAt) {}

  CachingPlanResolver(PlanAssignments store, RateLimitPolicies policies, Ticker ticker,
      Duration refresh, int maxKeys) {
    if (store == null || policies == null || ticker == null || refresh == null) {
      throw new IllegalArgumentException("store, policies, ticker and refresh must not be null");
    }
    if (refresh.isZero() || refresh.isNegative()) {
      throw new IllegalArgumentException("refresh must be positive, but was " + refresh);
    }
    if (maxKeys < 1) {
      throw new IllegalArgumentException("maxKeys must be >= 1, but was " + maxKeys);
    }
    this.store = store;
    this.policies = policies;
    this.ticker = ticker;
    this.refreshNanos = refresh.toNanos();
    this.maxKeys = maxKeys;
  }

  @Override
  public String plan(String apiKey) {
    Entry cached = cached(apiKey);
    return cached != null ? cached.plan : read(apiKey).plan;
  }

  @Override
  public CompletionStage<String> planAsync(String apiKey) {
    Entry cached = cached(apiKey);
    return cached != null ? CompletableFuture.completedFuture(cached.plan)
        : readAsync(apiKey).thenApply(Entry::plan);
  }

  @Override
  public boolean assigned(String apiKey) {
    Entry cached = cached(apiKey);
    return (cached != null ? cached : read(apiKey)).assigned;
  }

  /**
   * Writes the assignment to the store and to this instance's cache: this instance sees it at
   * once, every other instance within the refresh interval.
   */
  @Override
  public void assign(String apiKey, @Nullable String plan) {
    if (plan != null && !policies.containsPlan(plan)) {
      throw new IllegalArgumentException(
          "plan must be one of " + policies.plans() + ", or null, but was '" + plan + "'");
    }
    store.assignPlan(apiKey, plan);
    put(apiKey, new Entry(plan == null ? policies.defaultPlan() : plan, plan != null, ticker.read()));
  }

  /** The cached entry when fresh enough to use, reading it again in the background when aging. */
  private @Nullable Entry cached(String apiKey) {
    Entry e = cache.get(apiKey);
    if (e == null) {
      return null;
    }
    long age = ticker.read() - e.readAt;
    if (age >= refreshNanos) {
      return null;
    }
    if (age >= refreshNanos / 2 && !loading.containsKey(apiKey)) {
      readAsync(apiKey);
    }
    return e;
  }

  /** Reads a key's plan from the store on the calling thread. */
  private Entry read(String apiKey) {
    long started = ticker.read();
    Optional<String> assigned;
    try {
      assigned = store.assignedPlan(apiKey);
    } catch (RuntimeException e) {
      return unread(apiKey, e, started);
    }
    return read(apiKey, assigned, started);
  }

  /** Caches what the store answered for a key read at {@code started}. */
  private Entry read(String apiKey, Optional<String> assigned, long started) {
    Optional<String> configured = assigned.filter(policies::containsPlan);
    return put(apiKey,
        new Entry(configured.orElse(policies.defaultPlan()), configured.isPresent(), started));
  }

  /** What a key's plan is taken for when the store could not read it: the plan last read, else the default. */
  private Entry unread(String apiKey, Throwable failure, long started) {
    Entry known = cache.get(apiKey);
    LOG.log(System.Logger.Level.DEBUG,
        () -> "Could not read a key's plan: " + failure.getClass().getName());
    return known != null ? known : new Entry(policies.defaultPlan(), false, started);
  }

  /** Reads a key's plan through the store's asynchronous read; one read per key at a time. */
  private CompletableFuture<Entry> readAsync(String apiKey) {
    if (closed) {
      Entry known = cache.get(apiKey);
      return CompletableFuture.completedFuture(known != null ? known
          : new Entry(policies.defaultPlan(), false, ticker.read()));
    }
    CompletableFuture<Entry> started = new CompletableFuture<>();
    CompletableFuture<Entry> running = loading.putIfAbsent(apiKey, started);
    if (running != null) {
      return running;
    }
    long at = ticker.read();
    CompletionStage<Optional<String>> reply;
    try {
      reply = store.assignedPlanAsync(apiKey);
    } catch (RuntimeException e) {
      reply = CompletableFuture.failedFuture(e);
    }
    reply.whenComplete((assigned, failure) -> {
      try {
        started.complete(failure == null ? read(apiKey, assigned, at) : unread(apiKey, failure, at));
      } catch (RuntimeException | Error e) {
        started.completeExceptionally(e);
      } finally {
        loading.remove(apiKey, started);
      }
    });
    return started;
  }

  /** Caches an entry unless a newer read is cached already; returns the entry cached. */
  private Entry put(String apiKey, Entry entry) {
    if (cache.size() >= maxKeys && !cache.containsKey(apiKey)) {
      Iterator<String> keys = cache.keySet().iterator();
      if (keys.hasNext()) {
        keys.next();
        keys.remove();
      }
    }
    return cache.merge(apiKey, entry, (old, read) -> read.readAt - old.readAt >= 0 ? read : old);
  }

  /** The number of keys cached now. */
  int cachedKeys() {
    return cache.size();
  }

  /** Stops reading plans in the background: a key not cached gets the default plan. */
  @Override
  public void close() {
    closed = true;
  }
}
