package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.GatewayLimiter;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.redis.FailurePolicy;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import java.time.Duration;
import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.ZoneId;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The limiter under test on Redis: its own {@code redis-server}, a {@link RedisRateLimitStore} on
 * one connection whose client counts every command it sends, and a sequential {@link
 * GatewayLimiter} (window and bucket) with limits that never deny during a run.
 *
 * <p>The store fails closed with a long command timeout, so that a Redis error or timeout shows as
 * a deny, which the benchmarks count as a failed run.
 */
final class RedisLimiter implements AutoCloseable {

  /** A window this short keeps the sorted set of one hot key small (as in the in-process runs). */
  static final Duration WINDOW = Duration.ofMillis(10);
  static final int WINDOW_LIMIT = 100_000_000;
  /** More tokens than a run can spend, refilled slowly. */
  static final double TOKENS = 10_000_000_000.0;
  static final double REFILL_PER_SECOND = 1;
  /** Model tokens a window admits: more than a run can reserve. */
  static final long MODEL_TOKEN_LIMIT = 1_000_000_000_000L;
  /** The model tokens each reservation estimates. */
  static final long ESTIMATE = 100;
  /**
   * The stores' heartbeat interval while measured: none within a run. A heartbeat is one script
   * call a second per gateway instance, not per decision; left on, it would break the check of
   * exactly one round trip per decision.
   */
  static final Duration NO_HEARTBEAT = Duration.ofDays(1);
  /**
   * The upstream of the upstream cases: requests and model tokens per window, in the same short
   * window and with the same limits as the callers' levels, so that it admits every call of a run.
   */
  static final Upstream UPSTREAM = new Upstream("bench-provider",
      new WindowLimit(WINDOW_LIMIT, WINDOW), new ModelTokenLimit(MODEL_TOKEN_LIMIT, WINDOW), null);
  /** A call without model tokens. */
  private static final Consumption CALL = Consumption.ofCall(0, 0);
  /** A window and a bucket, for the calls with and without an upstream. */
  private static final List<Budget> UPSTREAM_LEVELS = List.of(new Budget("bench-upstream-calls",
      new WindowLimit(WINDOW_LIMIT, WINDOW), new BucketLimit(TOKENS, REFILL_PER_SECOND), null, null));
  /** The same with model tokens. */
  private static final List<Budget> UPSTREAM_TOKEN_LEVELS = List.of(new Budget(
      "bench-upstream-tokens", new WindowLimit(WINDOW_LIMIT, WINDOW),
      new BucketLimit(TOKENS, REFILL_PER_SECOND), new ModelTokenLimit(MODEL_TOKEN_LIMIT, WINDOW),
      null));

  final RedisServer server;
  final RedisInfo info;
  final CommandCounter commands = new CommandCounter();
  final RoundTrips roundTrips;
  private final ClientResources resources;
  private final RedisRateLimitStore store;
  final GatewayLimiter limiter;
  /** The same limits and model tokens in the same short window, on the same store. */
  final GatewayLimiter modelTokens;
  /** The model-token budget with two quotas, a daily cost and a monthly model-token one. */
  private final List<Budget> quotas;
  /** The store's upstream order, once {@link #openOrder()} opened it. */
  private @Nullable UpstreamOrder order;

  /**
   * A store's builder as every Redis benchmark measures it: failing closed with a long command
   * timeout (a Redis error or timeout shows as a deny) and no heartbeat within a run.
   */
  static RedisRateLimitStore.Builder measured(RedisServer server) {
    return measured(RedisRateLimitStore.builder(server.uri()));
  }

  /** Gives {@code builder} (of a standalone server or a Cluster) the settings of {@link #measured(RedisServer)}. */
  static RedisRateLimitStore.Builder measured(RedisRateLimitStore.Builder builder) {
    return builder
        .failurePolicy(FailurePolicy.FAIL_CLOSED)
        .commandTimeout(Duration.ofSeconds(5))
        .heartbeatInterval(NO_HEARTBEAT);
  }

  RedisLimiter() {
    server = RedisServer.start();
    info = new RedisInfo(server.uri());
    resources = DefaultClientResources.builder().commandLatencyRecorder(commands).build();
    store = measured(server).clientResources(resources).build();
    limiter = GatewayLimiter.builder()
        .requestsPerWindow(WINDOW_LIMIT, WINDOW)
        .burst(TOKENS, REFILL_PER_SECOND)
        .composition(Composition.SEQUENTIAL)
        .store(store)
        .build();
    modelTokens = GatewayLimiter.builder()
        .name("bench-model-tokens")
        .requestsPerWindow(WINDOW_LIMIT, WINDOW)
        .burst(TOKENS, REFILL_PER_SECOND)
        .modelTokensPerWindow(MODEL_TOKEN_LIMIT, WINDOW)
        .composition(Composition.SEQUENTIAL)
        .store(store)
        .build();
    quotas = List.of(new Budget("bench-quotas", new WindowLimit(WINDOW_LIMIT, WINDOW),
        new BucketLimit(TOKENS, REFILL_PER_SECOND), new ModelTokenLimit(MODEL_TOKEN_LIMIT, WINDOW),
        null, List.of(
            QuotaLimit.of("daily-cost", QuotaUnit.COST, QuotaLimit.MAX_LIMIT, QuotaPeriod.DAY)
                .inZone(ZoneId.of("Europe/Berlin")).withThresholds(50, 80, 100),
            QuotaLimit.of("monthly-tokens", QuotaUnit.TOKENS, QuotaLimit.MAX_LIMIT,
                QuotaPeriod.MONTH).withThresholds(80)), null));
    roundTrips = new RoundTrips(commands, info);
  }

  /** Returns the limiter's decision for {@code key}, which must be an allow. */
  Decision allowed(String key) {
    Decision d = limiter.allow(key);
    if (!d.allowed()) {
      throw new IllegalStateException("an allowed case was denied: " + d
          + " (Redis errors so far: " + store.errorCount() + ")");
    }
    return d;
  }

  /**
   * Reserves {@value #ESTIMATE} model tokens for a call of {@code key}, which must be admitted:
   * the one round trip of a decision on a budget that limits model tokens.
   */
  Reservation reserved(String key) {
    return admitted(store, modelTokens.reserve(key, 1, ESTIMATE));
  }

  /**
   * Reserves {@value #ESTIMATE} model tokens and a cost for a call of {@code key} on the budget
   * with two quotas, which must be admitted: the one round trip of a decision with quotas.
   */
  Reservation reservedWithQuotas(String key) {
    return admitted(store, store.reserve(quotas, List.of(key), 1, new Consumption(1, ESTIMATE, 2_500),
        Composition.SEQUENTIAL));
  }

  /**
   * Decides one call of {@code key} on {@code store} with {@code upstream} on the call or none,
   * which must be admitted: one {@code reserve}, as the gateway sends it.
   *
   * @param modelTokens whether the call's levels limit model tokens ({@value #ESTIMATE} reserved)
   *     or are a window and a bucket only
   */
  static Reservation reserved(RedisRateLimitStore store, boolean modelTokens, String key,
      @Nullable Upstream upstream) {
    List<Budget> levels = levels(modelTokens);
    Consumption estimate = estimate(modelTokens);
    return admitted(store, upstream == null
        ? store.reserve(levels, List.of(key), 1, estimate, Composition.SEQUENTIAL)
        : store.reserve(levels, List.of(key), 1, estimate, Composition.SEQUENTIAL, upstream));
  }

  /**
   * Decides one call of {@code key} on {@code store} with {@link #UPSTREAM} and the call's turn in
   * its order (tenant {@code key}, weight 1, class 0, the call's estimate; not waiting), which
   * must be admitted: one {@code reserve}, as the gateway sends it when the store keeps an order.
   *
   * @param modelTokens whether the call's levels limit model tokens ({@value #ESTIMATE} reserved
   *     and counted in the tenant's service) or are a window and a bucket only (none counted)
   */
  static Reservation reservedInTurn(RedisRateLimitStore store, boolean modelTokens, String key) {
    Consumption estimate = estimate(modelTokens);
    return admitted(store, store.reserve(levels(modelTokens), List.of(key), 1, estimate,
        Composition.SEQUENTIAL, UPSTREAM,
        new UpstreamTurn(key, 1, 0, estimate.modelTokens(), null)));
  }

  /** {@link #reservedInTurn(RedisRateLimitStore, boolean, String)} on this limiter's store. */
  Reservation reservedInTurn(boolean modelTokens, String key) {
    return reservedInTurn(store, modelTokens, key);
  }

  /** The model tokens each call with a turn reserves and counts in its tenant's service. */
  static long turnEstimate(boolean modelTokens) {
    return estimate(modelTokens).modelTokens();
  }

  private static List<Budget> levels(boolean modelTokens) {
    return modelTokens ? UPSTREAM_TOKEN_LEVELS : UPSTREAM_LEVELS;
  }

  private static Consumption estimate(boolean modelTokens) {
    return modelTokens ? Consumption.ofCall(ESTIMATE, 0) : CALL;
  }

  /** Opens the store's upstream order as a gateway does, before the calls are counted. */
  void openOrder() throws InterruptedException {
    order = EmptyOrder.open(store, List.of(info));
  }

  /**
   * Checks the order {@link #openOrder()} opened after {@code decisions} calls with a turn:
   * {@link EmptyOrder#verify}.
   */
  void verifyOrder(long decisions, boolean modelTokens) {
    UpstreamOrder o = order;
    if (o == null) {
      throw new IllegalStateException("the order was not opened");
    }
    EmptyOrder.verify(o, List.of(info), decisions, turnEstimate(modelTokens));
  }

  /** {@link #reserved(RedisRateLimitStore, boolean, String, Upstream)} on this limiter's store. */
  Reservation reserved(boolean modelTokens, String key, @Nullable Upstream upstream) {
    return reserved(store, modelTokens, key, upstream);
  }

  private static Reservation admitted(RedisRateLimitStore store, Reservation r) {
    if (!r.decision().allowed()) {
      throw new IllegalStateException("an allowed case was denied: " + r.decision()
          + " (Redis errors so far: " + store.errorCount() + ")");
    }
    return r;
  }

  /** Throws if any Redis call failed. */
  void checkNoErrors() {
    if (store.errorCount() != 0) {
      throw new IllegalStateException(store.errorCount() + " Redis calls failed");
    }
  }

  @Override
  public void close() {
    try {
      store.close();
      resources.shutdown();
      info.close();
    } finally {
      server.close();
    }
  }
}
