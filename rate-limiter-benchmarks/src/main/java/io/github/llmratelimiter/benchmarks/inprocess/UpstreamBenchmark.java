package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.UpstreamWaitingRoom;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What an upstream, its shared fair order while no call waits, and an empty waiting room add to a
 * decision on the in-memory store, over 10,000 keys in sequential composition: the same call
 * without an upstream, with an upstream (requests and model tokens per window, one state shared
 * by every key) on the call, with the upstream and the call's turn in the store's order ({@link
 * RateLimitStore#reserve(List, List, double, Consumption, Composition, Upstream, UpstreamTurn)}:
 * the store checks that no call waits and counts the tenant's service), and with the upstream
 * through {@link UpstreamWaitingRoom#await(UpstreamWaitingRoom.Call, UpstreamWaitingRoom.Attempt)}
 * while no call waits (the call is tried at once).
 *
 * <p>Two policies: a window and a bucket (the decision: one {@code reserve}), and the same with a
 * model-token window (the decision and its settlement: {@code reserve} of an estimate, then
 * {@code reconcile} with the usage, which settles the upstream's model tokens too; with a turn,
 * also {@link UpstreamOrder#settled} and {@link UpstreamOrder#signal}, as the gateway does after a
 * call). Every limit admits every call of a run; a deny fails the run, and so does a call left
 * waiting in the room or in the order.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class UpstreamBenchmark {

  /** The upstream's name. */
  static final String UPSTREAM = "bench-provider";

  private static final Duration MAX_WAIT = Duration.ofSeconds(10);

  private RateLimitStore store;
  private UpstreamOrder order;
  private List<Budget> windowBucket;
  private List<Budget> modelTokens;
  private Upstream upstream;
  private ScheduledThreadPoolExecutor scheduler;
  private UpstreamWaitingRoom room;
  private String[] keys;
  private final Consumption call = Consumption.ofCall(0, 0);
  private final Consumption estimate = Consumption.ofCall(1_000, 0);
  private final Consumption actual = Consumption.ofCall(800, 0);

  /** Builds the store, the budgets, the upstream and the waiting room. */
  @Setup
  public void setUp() {
    store = RateLimitStore.inMemory();
    UpstreamOrder o = store.upstreamOrder();
    if (o == null) {
      throw new IllegalStateException("the in-memory store keeps no upstream order");
    }
    order = o;
    keys = Limits.keys("tenant", Limits.KEY_COUNT);
    WindowLimit window = new WindowLimit(Limits.ALLOW_WINDOW_LIMIT, Limits.ALLOW_WINDOW);
    BucketLimit bucket = new BucketLimit(Limits.ALLOW_TOKENS, Limits.ALLOW_REFILL_PER_SECOND);
    ModelTokenLimit tokens = new ModelTokenLimit(Long.MAX_VALUE / 4, Limits.ALLOW_WINDOW);
    windowBucket = List.of(new Budget("chat", window, bucket, null, null));
    modelTokens = List.of(new Budget("chat-tokens", window, bucket, tokens, null));
    upstream = new Upstream(UPSTREAM, window, tokens, null);
    scheduler = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "upstream-benchmark-scheduler");
      t.setDaemon(true);
      return t;
    });
    scheduler.setRemoveOnCancelPolicy(true);
    room = new UpstreamWaitingRoom(Ticker.system(), UpstreamWaitingRoom.Scheduler.of(scheduler),
        UpstreamWaitingRoom.DEFAULT_MAX_WAITERS, UpstreamWaitingRoom.DEFAULT_MEMORY);
  }

  /** Closes the room and the store; throws if a call waited in the room or in the order. */
  @TearDown
  public void tearDown() {
    long inOrder = order.waiting(upstream).toCompletableFuture().join();
    if (inOrder != 0) {
      throw new IllegalStateException(inOrder + " calls waited in the upstream's order in a run"
          + " where the upstream admits every call");
    }
    if (room.waiting(UPSTREAM) != 0) {
      throw new IllegalStateException(room.waiting(UPSTREAM) + " calls waited in a run where"
          + " the upstream admits every call");
    }
    room.close();
    scheduler.shutdownNow();
    store.close();
  }

  /** Window and bucket, no upstream: one decision. */
  @Benchmark
  public long windowBucketWithoutUpstream(ThreadKeys t) {
    Reservation r = store.reserve(windowBucket, List.of(keys[t.next()]), 1, call,
        Composition.SEQUENTIAL);
    return Check.allowed(r.decision()).remaining();
  }

  /** Window and bucket, with the upstream on the call: one decision. */
  @Benchmark
  public long windowBucketWithUpstream(ThreadKeys t) {
    Reservation r = store.reserve(windowBucket, List.of(keys[t.next()]), 1, call,
        Composition.SEQUENTIAL, upstream);
    return Check.allowed(r.decision()).remaining();
  }

  /**
   * Window and bucket, with the upstream and the call's turn in its order while no call waits:
   * one decision, which also counts the tenant's service.
   */
  @Benchmark
  public long windowBucketWithTurn(ThreadKeys t) {
    String key = keys[t.next()];
    Reservation r = store.reserve(windowBucket, List.of(key), 1, call, Composition.SEQUENTIAL,
        upstream, turn(key, call));
    return Check.allowed(r.decision()).remaining();
  }

  /** Window and bucket, with the upstream, through the waiting room while no call waits. */
  @Benchmark
  public long windowBucketThroughEmptyRoom(ThreadKeys t) {
    String key = keys[t.next()];
    Reservation r = throughRoom(windowBucket, key, call);
    return Check.allowed(r.decision()).remaining();
  }

  /** Window, bucket and model tokens, no upstream: reserve and reconcile. */
  @Benchmark
  public long modelTokensWithoutUpstream(ThreadKeys t) {
    Reservation r = store.reserve(modelTokens, List.of(keys[t.next()]), 1, estimate,
        Composition.SEQUENTIAL);
    return settle(r);
  }

  /** Window, bucket and model tokens, with the upstream on the call: reserve and reconcile. */
  @Benchmark
  public long modelTokensWithUpstream(ThreadKeys t) {
    Reservation r = store.reserve(modelTokens, List.of(keys[t.next()]), 1, estimate,
        Composition.SEQUENTIAL, upstream);
    return settle(r);
  }

  /**
   * Window, bucket and model tokens, with the upstream and the call's turn in its order while no
   * call waits: reserve (which counts the estimate in the tenant's counter), reconcile, the
   * tenant's counter corrected with the usage in the order, and the order told that capacity may
   * have freed, as after a call.
   */
  @Benchmark
  public long modelTokensWithTurn(ThreadKeys t) {
    String key = keys[t.next()];
    UpstreamTurn turn = turn(key, estimate);
    Reservation r = store.reserve(modelTokens, List.of(key), 1, estimate,
        Composition.SEQUENTIAL, upstream, turn);
    long remaining = settle(r);
    order.settled(upstream, turn, actual.modelTokens()).toCompletableFuture().join();
    order.signal(UPSTREAM);
    return remaining;
  }

  /**
   * Window, bucket and model tokens, with the upstream, through the waiting room while no call
   * waits: reserve, reconcile, and the room's counter corrected with the usage.
   */
  @Benchmark
  public long modelTokensThroughEmptyRoom(ThreadKeys t) {
    String key = keys[t.next()];
    Reservation r = throughRoom(modelTokens, key, estimate);
    long remaining = settle(r);
    room.settled(UPSTREAM, key, 1, estimate.modelTokens(), actual.modelTokens());
    room.capacityMayHaveFreed(UPSTREAM);
    return remaining;
  }

  private Reservation throughRoom(List<Budget> levels, String key, Consumption consumption) {
    UpstreamWaitingRoom.Call waiting = new UpstreamWaitingRoom.Call(UPSTREAM, key, 1, 0,
        consumption.modelTokens(), MAX_WAIT);
    UpstreamWaitingRoom.Attempt<Reservation> attempt = UpstreamWaitingRoom.Attempt.of(
        () -> CompletableFuture.completedFuture(store.reserve(levels, List.of(key), 1,
            consumption, Composition.SEQUENTIAL, upstream)),
        Reservation::decision,
        retryAfterMs -> {
          throw new IllegalStateException("a call waited for an upstream that admits every call");
        },
        store::release);
    Reservation r = room.await(waiting, attempt).toCompletableFuture().getNow(null);
    if (r == null) {
      throw new IllegalStateException("a call through an empty room was not decided at once");
    }
    return r;
  }

  /** The turn of a call of {@code key} that does not wait: its tenant, weight 1, class 0. */
  private static UpstreamTurn turn(String key, Consumption consumption) {
    return new UpstreamTurn(key, 1, 0, consumption.modelTokens(), null);
  }

  private long settle(Reservation r) {
    Check.allowed(r.decision());
    store.reconcile(r, actual);
    return r.decision().remaining();
  }
}
