package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamTurn;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.ZoneId;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Differential test: random calls (hierarchies, both modes, fractional costs, equal timestamps,
 * window and refill boundaries, keys moving between the variants of a budget at random, slots
 * taken, released and expiring) on the in-memory store and the Redis store under one ticker must
 * give equal decisions, call for call, and equal monitoring snapshots.
 */
abstract class AbstractParityTests {

  /** The Redis store under test, on {@code ticker}. */
  abstract RedisRateLimitStore.Builder redis(Ticker ticker);

  private static final Budget ORG = Budget.of("org",
      new WindowLimit(7, Duration.ofSeconds(2)), new BucketLimit(5, 2.5));
  private static final Budget USER = Budget.of("user",
      new WindowLimit(4, Duration.ofMillis(700)), new BucketLimit(2.5, 0.7));
  private static final Budget MODEL = new Budget("model:x", null, new BucketLimit(3, 3));
  private static final Budget WINDOW_ONLY = new Budget("window-only",
      new WindowLimit(3, Duration.ofMillis(250)), null);
  private static final Budget ONE_SHOT = new Budget("one-shot", null, new BucketLimit(4, 0));
  private static final Budget MINUTE = Budget.of("per-minute",
      WindowLimit.perMinute(10), new BucketLimit(1.5, 0.1));

  @ParameterizedTest
  @ValueSource(longs = {1, 2, 3})
  void randomCallsDecideAsInMemory(long draws) {
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker);
        RedisRateLimitStore redis = redis(ticker).build()) {
      for (int op = 0; op < 400; op++) {
        advance(ticker, rnd);
        RandomCall c = RandomCall.next(rnd);
        if (op % 2 == 0) {
          c.assertSameDecision(memory, redis, op);
        } else {
          c.assertSameReservation(memory, redis, op);
        }
        c.assertSameStateEvery(10, memory, redis, op);
      }
      assertThat(redis.errorCount()).isZero();
    }
  }

  @ParameterizedTest
  @ValueSource(longs = {6, 7, 8})
  void callsRefundedWhenTheyRanLeaveNoTrace(long draws) {
    // a call the failure policy answered, whose late reply was refunded: on Redis only, the
    // in-memory store never sees it, and every later decision and state must still agree
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker);
        RedisRateLimitStore redis = redis(ticker).build()) {
      LuaRateLimitStore lua = ((GuardedRedisStore) redis).lua();
      int refunded = 0;
      for (int op = 0; op < 400; op++) {
        advance(ticker, rnd);
        RandomCall c = RandomCall.next(rnd);
        if (rnd.nextInt(3) == 0) {
          LuaRateLimitStore.Call call = lua.plan(c.levels(), c.keys(), c.cost(), c.mode());
          if (call.decided() == null) {
            long sent = System.nanoTime();
            AcquireReply reply = lua.replies().await(lua.submit(call, sent + 60_000_000_000L), sent);
            if (lua.refund(call, reply).join()) {
              refunded++;
            }
          }
        } else {
          c.assertSameDecision(memory, redis, op);
        }
        c.assertSameStateEvery(10, memory, redis, op);
      }
      assertThat(refunded).as("calls that charged something, then were refunded").isGreaterThan(50);
      assertThat(redis.errorCount()).isZero();
    }
  }

  private static final Budget TPM_ORG = new Budget("tpm-org",
      new WindowLimit(20, Duration.ofSeconds(3)), new BucketLimit(8, 4),
      new ModelTokenLimit(5000, Duration.ofSeconds(2)));
  private static final Budget TPM_KEY = new Budget("tpm-key", null, null,
      new ModelTokenLimit(1500, Duration.ofMillis(700)));

  @ParameterizedTest
  @ValueSource(longs = {4, 5})
  void randomReservationsAndReconciliationsDecideAsInMemory(long draws) {
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    List<Reservation[]> open = new ArrayList<>();
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker);
        RedisRateLimitStore redis = redis(ticker).build()) {
      for (int op = 0; op < 300; op++) {
        advance(ticker, rnd);
        if (!open.isEmpty() && rnd.nextInt(3) == 0) {
          Reservation[] pair = open.remove(rnd.nextInt(open.size()));
          long actual = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(2000);
          memory.reconcile(pair[0], actual);
          redis.reconcile(pair[1], actual);
          continue;
        }
        String org = "o" + rnd.nextInt(2);
        List<Budget> levels = rnd.nextBoolean() ? List.of(TPM_ORG) : List.of(TPM_ORG, TPM_KEY);
        List<String> keys = levels.size() == 1 ? List.of(org) : List.of(org, org + "/k" + rnd.nextInt(2));
        long estimate = rnd.nextInt(5) == 0 ? 6000 : rnd.nextInt(1200);
        double cost = rnd.nextBoolean() ? 1 : 0.75;
        Composition mode = rnd.nextBoolean() ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT;
        Reservation expected = memory.reserve(levels, keys, cost, estimate, mode);
        Reservation actual = redis.reserve(levels, keys, cost, estimate, mode);
        String what = "op " + op + ": " + keys + " estimate " + estimate + " " + mode;
        assertThat(actual.decision()).as(what).isEqualTo(expected.decision());
        assertThat(actual.reserved()).as(what).isEqualTo(expected.reserved());
        // a level a sequential deny never reached too: both stores report it as of now
        assertThat(actual.remainingModelTokens()).as(what)
            .isEqualTo(expected.remainingModelTokens());
        assertThat(actual.modelTokensResetMs()).as(what).isEqualTo(expected.modelTokensResetMs());
        assertSameComponents(expected, actual, what);
        if (expected.reserved()) {
          open.add(new Reservation[] {expected, actual});
        }
        for (int i = 0; i < levels.size(); i++) {
          assertSameState(memory.administration().orElseThrow().inspect(levels.get(i), keys.get(i)),
              redis.administration().orElseThrow().inspect(levels.get(i), keys.get(i)), op);
        }
      }
      assertThat(redis.errorCount()).isZero();
    }
  }

  /** A model-token window that holds hundreds of entries: written in place, compacted now and then. */
  private static final Budget TPM_LARGE = new Budget("tpm-large", null, null,
      new ModelTokenLimit(800_000, Duration.ofSeconds(4)));

  /**
   * Hundreds of reservations in one model-token window, settled in any order (the newest, old
   * ones still in the window, ones that left it, refunds), some denied: the same decisions and
   * windows on both stores while Redis writes the window in place and compacts it.
   */
  @ParameterizedTest
  @ValueSource(longs = {6, 7})
  void largeModelTokenWindowsSettledInAnyOrderDecideAsInMemory(long draws) {
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    List<Reservation[]> open = new ArrayList<>();
    List<Budget> levels = List.of(TPM_LARGE);
    List<String> keys = List.of("big");
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker);
        RedisRateLimitStore redis = redis(ticker).build()) {
      for (int op = 0; op < 1_500; op++) {
        ticker.advanceNanos(rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(12_000_000));
        int pick = rnd.nextInt(10);
        if (!open.isEmpty() && pick < 4) {
          // mostly the newest, sometimes any
          int i = pick < 3 ? open.size() - 1 - rnd.nextInt(Math.min(3, open.size()))
              : rnd.nextInt(open.size());
          Reservation[] pair = open.remove(i);
          long actual = rnd.nextInt(6) == 0 ? 0 : rnd.nextInt(3000);
          memory.reconcile(pair[0], actual);
          redis.reconcile(pair[1], actual);
        } else {
          long estimate = rnd.nextInt(20) == 0 ? 60_000 : rnd.nextInt(2000);
          Reservation expected = memory.reserve(levels, keys, 1, estimate, Composition.SEQUENTIAL);
          Reservation actual = redis.reserve(levels, keys, 1, estimate, Composition.SEQUENTIAL);
          String what = "op " + op + ": estimate " + estimate;
          assertThat(actual.decision()).as(what).isEqualTo(expected.decision());
          assertThat(actual.remainingModelTokens()).as(what)
              .isEqualTo(expected.remainingModelTokens());
          assertThat(actual.modelTokensResetMs()).as(what).isEqualTo(expected.modelTokensResetMs());
          if (expected.reserved()) {
            open.add(new Reservation[] {expected, actual});
          }
        }
        assertSameState(memory.administration().orElseThrow().inspect(TPM_LARGE, "big"),
            redis.administration().orElseThrow().inspect(TPM_LARGE, "big"), op);
      }
      assertThat(redis.errorCount()).isZero();
    }
  }

  private static final Budget QUOTA_ORG = new Budget("quota-org",
      new WindowLimit(30, Duration.ofSeconds(3)), new BucketLimit(6, 3),
      new ModelTokenLimit(6000, Duration.ofSeconds(2)), null, List.of(
          QuotaLimit.of("calls", QuotaUnit.REQUESTS, 25, QuotaPeriod.HOUR)
              .withThresholds(50, 80, 100),
          new QuotaLimit("tokens", QuotaUnit.TOKENS, 9000, QuotaPeriod.DAY,
              ZoneId.of("America/New_York"), List.of(10, 90), true),
          QuotaLimit.of("spend", QuotaUnit.COST, 3_000_000, QuotaPeriod.DAY).enforced(false)
              .withThresholds(100)), null);
  private static final Budget QUOTA_KEY = new Budget("quota-key", null, null, null, null,
      List.of(QuotaLimit.of("calls", QuotaUnit.REQUESTS, 12, QuotaPeriod.HOUR).withThresholds(75),
          QuotaLimit.of("spend", QuotaUnit.COST, 900_000, QuotaPeriod.WEEK)), null);

  /** A plan of a quota budget: the same quotas with other limits, or one quota fewer. */
  private static Budget quotaPlan(Random rnd, Budget b) {
    return switch (rnd.nextInt(4)) {
      case 0 -> b.withQuotas(b.quotas().stream().map(q -> q.withLimit(q.limit() * 2)).toList());
      case 1 -> b.withQuotas(b.quotas().subList(1, b.quotas().size()));
      default -> b;
    };
  }

  /**
   * Random reservations with quotas (requests, tokens and cost; enforced and shadow; hour, day
   * and week periods in two zones) and their settlements (usage above and below the estimate,
   * failed calls refunded), over period boundaries of a driven wall clock, both modes, keys moving
   * between plans: the same decisions, quota statuses (thresholds crossed included) and counters
   * on both stores.
   */
  @ParameterizedTest
  @ValueSource(longs = {21, 22, 23})
  void randomQuotaReservationsDecideAsInMemory(long draws) {
    ManualTicker ticker = new ManualTicker();
    // a wall clock ahead of the real one (Redis expires counters at their period's end and a day)
    AtomicLong wall = new AtomicLong(Instant.now().truncatedTo(ChronoUnit.DAYS)
        .plus(1, ChronoUnit.DAYS).plus(50, ChronoUnit.MINUTES).toEpochMilli());
    InstantSource clock = () -> Instant.ofEpochMilli(wall.get());
    Random rnd = new Random(draws);
    List<Reservation[]> open = new ArrayList<>();
    int denied = 0;
    int crossed = 0;
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker, clock, 1_000_000,
            task -> new CompletableFuture<Void>());
        RedisRateLimitStore redis = redis(ticker).wallClock(clock).build()) {
      for (int op = 0; op < 300; op++) {
        advance(ticker, rnd);
        wall.addAndGet(rnd.nextInt(10) == 0 ? rnd.nextInt(3_600_000) : rnd.nextInt(60_000));
        if (!open.isEmpty() && rnd.nextInt(3) == 0) {
          Reservation[] pair = open.remove(rnd.nextInt(open.size()));
          Consumption actual = rnd.nextInt(4) == 0 ? Consumption.NONE
              : Consumption.ofCall(rnd.nextInt(2500), rnd.nextInt(400_000));
          memory.reconcile(pair[0], actual);
          redis.reconcile(pair[1], actual);
          continue;
        }
        String org = "o" + rnd.nextInt(2);
        List<Budget> levels = rnd.nextBoolean() ? List.of(quotaPlan(rnd, QUOTA_ORG))
            : List.of(quotaPlan(rnd, QUOTA_ORG), quotaPlan(rnd, QUOTA_KEY));
        List<String> keys = levels.size() == 1 ? List.of(org)
            : List.of(org, org + "/k" + rnd.nextInt(2));
        Consumption estimate = Consumption.ofCall(
            rnd.nextInt(6) == 0 ? 7000 : rnd.nextInt(1500), rnd.nextInt(300_000));
        Composition mode = rnd.nextBoolean() ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT;
        Reservation expected = memory.reserve(levels, keys, 1, estimate, mode);
        Reservation actual = redis.reserve(levels, keys, 1, estimate, mode);
        String what = "op " + op + ": " + keys + " " + estimate + " " + mode;
        assertThat(actual.decision()).as(what).isEqualTo(expected.decision());
        assertThat(actual.quotas()).as(what).isEqualTo(expected.quotas());
        assertSameComponents(expected, actual, what);
        assertThat(actual.chargedQuotas()).as(what).isEqualTo(expected.chargedQuotas());
        assertThat(actual.quotaAtMs()).as(what).isEqualTo(expected.quotaAtMs());
        assertThat(actual.estimatedSpend()).as(what).isEqualTo(expected.estimatedSpend());
        if (expected.decision().reason() == Reason.QUOTA_EXCEEDED) {
          denied++;
        }
        for (var q : expected.quotas()) {
          crossed += q.crossed().size();
        }
        if (expected.chargedQuotas()) {
          open.add(new Reservation[] {expected, actual});
        }
        for (int i = 0; i < levels.size(); i++) {
          assertThat(redis.administration().orElseThrow().quotas(levels.get(i), keys.get(i)))
              .as(what).isEqualTo(memory.administration().orElseThrow()
                  .quotas(levels.get(i), keys.get(i)));
        }
      }
      assertThat(denied).as("quota denies").isGreaterThan(10);
      assertThat(crossed).as("thresholds crossed").isGreaterThan(5);
      assertThat(redis.errorCount()).isZero();
    }
  }

  /**
   * Buckets of capacities up to 10^9 refilled at down to 10^-3 a second, drained and called again
   * with costs that wait up to 10^4 s, at random instants: the same decisions (retries included)
   * and snapshots (the next free millisecond included) on both stores.
   */
  @ParameterizedTest
  @ValueSource(longs = {15, 16})
  void largeAndSlowBucketsDecideAsInMemory(long draws) {
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    try (RateLimitStore memory = memory(ticker);
        RedisRateLimitStore redis = redis(ticker).build()) {
      int retries = 0;
      for (int trial = 0; trial < 30; trial++) {
        double capacity = rnd.nextBoolean() ? Math.pow(10, rnd.nextInt(10))
            : Math.min(1e9, Math.pow(10, 9 * rnd.nextDouble()));
        double refill = rnd.nextBoolean() ? 1e-3 : Math.pow(10, -3 + 4 * rnd.nextDouble());
        List<Budget> levels = List.of(new Budget("slow-" + trial, null,
            new BucketLimit(capacity, refill)));
        List<String> keys = List.of("k");
        for (int op = 0; op < 12; op++) {
          double cost = switch (rnd.nextInt(4)) {
            case 0 -> capacity;
            case 1 -> capacity * (1 - rnd.nextInt(8) * 1e-16);
            case 2 -> capacity * rnd.nextDouble();
            default -> Math.min(capacity, refill * Math.pow(10, -3 + 7 * rnd.nextDouble()));
          };
          Composition mode = rnd.nextBoolean() ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT;
          if (!(cost > 0)) {
            continue;
          }
          RandomCall c = new RandomCall(levels, keys, cost, mode);
          Decision d = memory.acquire(levels, keys, cost, mode);
          assertThat(redis.acquire(levels, keys, cost, mode))
              .as("trial %d op %d: capacity %s refill %s cost %s %s", trial, op, capacity, refill,
                  cost, mode)
              .isEqualTo(d);
          c.assertSameStateEvery(1, memory, redis, op);
          if (d.retryable() && d.retryAfterMs() > 0 && d.retryAfterMs() < 10_000_000) {
            retries++;
            ticker.advanceMillis(rnd.nextBoolean() ? d.retryAfterMs() : d.retryAfterMs() - 1);
          } else {
            ticker.advanceNanos(rnd.nextInt(1_000_000_000));
          }
        }
      }
      assertThat(retries).as("retries waited").isGreaterThan(50);
      assertThat(redis.errorCount()).isZero();
    }
  }

  /** The in-memory store under test: nothing drops its keys but the calls (as Redis on a ticker). */
  private static RateLimitStore memory(ManualTicker ticker) {
    return RateLimitStore.inMemory(ticker, 1_000_000, task -> new CompletableFuture<Void>());
  }

  /**
   * Each budget of {@link #pick} with two plans besides its defaults: the same components over
   * the same windows, smaller and larger limits, slower and faster refills.
   */
  private static Budget plan(Random rnd, Budget b) {
    int plan = rnd.nextInt(3);
    if (plan == 0) {
      return b;
    }
    double scale = plan == 1 ? 0.4 : 2.5;
    WindowLimit w = b.window();
    BucketLimit k = b.bucket();
    return b.variant(
        w == null ? null : new WindowLimit(Math.max(1, Math.round(w.limit() * scale)), w.window()),
        k == null ? null : new BucketLimit(k.capacity() * scale, k.refillPerSecond() * scale),
        null, null);
  }

  @ParameterizedTest
  @ValueSource(longs = {9, 10, 11})
  void keysMovingBetweenPlansDecideAsInMemory(long draws) {
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    try (RateLimitStore memory = memory(ticker);
        RedisRateLimitStore redis = redis(ticker).build()) {
      int variants = 0;
      for (int op = 0; op < 400; op++) {
        advance(ticker, rnd);
        RandomCall c = RandomCall.next(rnd);
        List<Budget> levels = new ArrayList<>();
        for (Budget b : c.levels()) {
          levels.add(plan(rnd, b));
        }
        variants += levels.stream().filter(Budget::isVariant).count();
        RandomCall moved = new RandomCall(levels, c.keys(), c.cost(), c.mode());
        moved.assertSameDecision(memory, redis, op);
        moved.assertSameStateEvery(5, memory, redis, op);
      }
      assertThat(variants).as("calls made with a plan's limits").isGreaterThan(200);
      assertThat(redis.errorCount()).isZero();
    }
  }

  private static final Budget SLOT_ORG = new Budget("slot-org",
      new WindowLimit(10, Duration.ofSeconds(2)), new BucketLimit(4, 2), null,
      new ConcurrencyLimit(3, Duration.ofMillis(1500)));
  private static final Budget SLOT_KEY = new Budget("slot-key", null, null,
      new ModelTokenLimit(2000, Duration.ofSeconds(1)), new ConcurrencyLimit(2, Duration.ofSeconds(1)));

  /** The slot budgets' plans: other limits and other leases over the same state. */
  private static Budget slotPlan(Random rnd, Budget b) {
    ConcurrencyLimit c = b.concurrency();
    switch (rnd.nextInt(3)) {
      case 0:
        return b;
      case 1:
        return b.variant(b.window(), b.bucket(),
            b.modelTokens() == null ? null : new ModelTokenLimit(800, Duration.ofSeconds(1)),
            new ConcurrencyLimit(1, Duration.ofMillis(700)));
      default:
        return b.variant(b.window() == null ? null : new WindowLimit(20, Duration.ofSeconds(2)),
            b.bucket(), b.modelTokens(), new ConcurrencyLimit(c.limit() + 3, Duration.ofSeconds(3)));
    }
  }

  @ParameterizedTest
  @ValueSource(longs = {12, 13, 14})
  void slotsTakenReleasedAndExpiringDecideAsInMemory(long draws) {
    slotsDecideAsInMemory(draws, redis(new ManualTicker()), false);
  }

  /**
   * The same with a slot lease shorter than some leases (3 s) and longer than any one step of the
   * ticker (under 2 s), the holder renewing its slots after each step, as it does every third of
   * the slot lease: a call holds its slot until it is released or its lease timeout passes.
   */
  @ParameterizedTest
  @ValueSource(longs = {12, 13, 14})
  void slotsRenewedByTheirHolderDecideAsInMemory(long draws) {
    slotsDecideAsInMemory(draws, redis(new ManualTicker()).slotLease(Duration.ofMillis(2_001)), true);
  }

  private void slotsDecideAsInMemory(long draws, RedisRateLimitStore.Builder builder, boolean renew) {
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    List<Reservation[]> open = new ArrayList<>();
    try (RateLimitStore memory = memory(ticker);
        RedisRateLimitStore redis = builder.ticker(ticker).build()) {
      int slotDenies = 0;
      int released = 0;
      for (int op = 0; op < 400; op++) {
        advance(ticker, rnd);
        if (renew) {
          ((GuardedRedisStore) redis).renewSlots().join();
        }
        if (!open.isEmpty() && rnd.nextInt(3) == 0) {
          Reservation[] pair = open.get(rnd.nextInt(open.size()));
          if (rnd.nextInt(4) > 0) {
            open.remove(pair); // else released again later: a second release does nothing
          }
          if (rnd.nextBoolean()) {
            long actual = rnd.nextInt(1500);
            memory.reconcile(pair[0], actual);
            redis.reconcile(pair[1], actual);
          }
          memory.release(pair[0]);
          redis.release(pair[1]);
          released++;
          continue;
        }
        String org = "o" + rnd.nextInt(2);
        List<Budget> levels = rnd.nextBoolean() ? List.of(slotPlan(rnd, SLOT_ORG))
            : List.of(slotPlan(rnd, SLOT_ORG), slotPlan(rnd, SLOT_KEY));
        List<String> keys = levels.size() == 1 ? List.of(org) : List.of(org, org + "/k" + rnd.nextInt(2));
        long estimate = rnd.nextInt(900);
        Composition mode = rnd.nextBoolean() ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT;
        Reservation expected = memory.reserve(levels, keys, 1, estimate, mode);
        Reservation actual = redis.reserve(levels, keys, 1, estimate, mode);
        String what = "op " + op + ": " + keys + " " + levels + " estimate " + estimate + " " + mode;
        assertThat(actual.decision()).as(what).isEqualTo(expected.decision());
        assertThat(actual.holdsSlots()).as(what).isEqualTo(expected.holdsSlots());
        assertSameComponents(expected, actual, what);
        assertThat(actual.reserved()).as(what).isEqualTo(expected.reserved());
        assertThat(actual.remainingModelTokens()).as(what)
            .isEqualTo(expected.remainingModelTokens());
        if (expected.decision().reason() == Reason.CONCURRENCY_LIMIT) {
          slotDenies++;
        }
        if (expected.holdsSlots()) {
          open.add(new Reservation[] {expected, actual});
        }
        for (int i = 0; i < levels.size(); i++) {
          assertSameState(memory.administration().orElseThrow().inspect(levels.get(i), keys.get(i)),
              redis.administration().orElseThrow().inspect(levels.get(i), keys.get(i)), op);
        }
      }
      assertThat(slotDenies).as("CONCURRENCY_LIMIT denies").isGreaterThan(20);
      assertThat(released).as("releases").isGreaterThan(50);
      assertThat(redis.errorCount()).isZero();
    }
  }

  /**
   * Equal figures for every component of every level, reported for each level whenever the store
   * read the state (every decision but a cost or an estimate that never fits).
   */
  private static final Budget UP_ORG = new Budget("up-org",
      new WindowLimit(25, Duration.ofSeconds(3)), new BucketLimit(12, 4),
      new ModelTokenLimit(6000, Duration.ofSeconds(2)), null);
  private static final Budget UP_KEY = new Budget("up-key",
      new WindowLimit(6, Duration.ofMillis(900)), null, null,
      new ConcurrencyLimit(3, Duration.ofSeconds(2)));
  private static final List<Upstream> UPSTREAMS = List.of(
      new Upstream("a", new WindowLimit(8, Duration.ofSeconds(1)),
          new ModelTokenLimit(2500, Duration.ofMillis(1500)),
          new ConcurrencyLimit(4, Duration.ofMillis(1500))),
      new Upstream("b", new WindowLimit(5, Duration.ofMillis(700)), null, null),
      new Upstream("c", null, new ModelTokenLimit(1200, Duration.ofSeconds(1)), null));

  /**
   * Random calls to upstreams (tenants of a hierarchy or a single level, both modes, estimates),
   * random provider reports (remaining counts with their resets, lower limits, retries), releases
   * and settlements give equal decisions, reservations and upstream statuses on both stores.
   */
  @ParameterizedTest
  @ValueSource(longs = {11, 12})
  void randomUpstreamCallsAndReportsDecideAsInMemory(long draws) {
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    List<Reservation[]> held = new ArrayList<>();
    int admitted = 0;
    int upstreamDenies = 0;
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker);
        RedisRateLimitStore redis = redis(ticker).build()) {
      for (int op = 0; op < 500; op++) {
        advance(ticker, rnd);
        Upstream u = UPSTREAMS.get(rnd.nextInt(UPSTREAMS.size()));
        int kind = rnd.nextInt(12);
        if (kind == 0) {
          ProviderReport r = randomReport(rnd);
          memory.report(u, r);
          redis.report(u, r);
        } else if (kind == 1 && !held.isEmpty()) {
          Reservation[] pair = held.remove(rnd.nextInt(held.size()));
          memory.release(pair[0]);
          redis.release(pair[1]);
        } else if (kind == 2 && !held.isEmpty()) {
          Reservation[] pair = held.get(rnd.nextInt(held.size()));
          Consumption actual = Consumption.ofCall(rnd.nextInt(1500), 0);
          memory.reconcile(pair[0], actual);
          redis.reconcile(pair[1], actual);
        } else {
          List<Budget> levels = switch (rnd.nextInt(3)) {
            case 0 -> List.of(UP_ORG, UP_KEY);
            case 1 -> List.of(UP_KEY);
            default -> List.of(UP_ORG);
          };
          int k = rnd.nextInt(4); // each key under one root: Redis keeps a lower level per root
          List<String> keys = levels.size() == 2
              ? List.of("o" + k % 2, "k" + k)
              : List.of("s" + rnd.nextInt(3));
          Consumption estimate = Consumption.ofCall(rnd.nextInt(900), 0);
          Composition mode = rnd.nextBoolean() ? Composition.SEQUENTIAL
              : Composition.RESERVE_COMMIT;
          Reservation expected = memory.reserve(levels, keys, 1, estimate, mode, u);
          Reservation actual = redis.reserve(levels, keys, 1, estimate, mode, u);
          String what = String.format("op %d: %s %s %s to %s", op, names(levels), keys,
              estimate.modelTokens(), u.name());
          assertThat(actual.decision()).as(what).isEqualTo(expected.decision());
          assertThat(actual.levels()).as(what).isEqualTo(expected.levels());
          assertThat(actual.remainingModelTokens()).as(what)
              .isEqualTo(expected.remainingModelTokens());
          assertThat(actual.modelTokensResetMs()).as(what).isEqualTo(expected.modelTokensResetMs());
          assertThat(actual.id() == 0).as(what).isEqualTo(expected.id() == 0);
          assertSameComponents(expected, actual, what);
          if (expected.decision().allowed()) {
            admitted++;
            if (expected.id() != 0) {
              held.add(new Reservation[] {expected, actual});
            }
          } else if (expected.decision().reason() == Reason.UPSTREAM_LIMIT) {
            upstreamDenies++;
          }
        }
        assertThat(redis.upstreamStatus(u)).as("op %d: %s", op, u.name())
            .isEqualTo(memory.upstreamStatus(u));
      }
      assertThat(admitted).as("admitted calls").isGreaterThan(50);
      assertThat(upstreamDenies).as("upstream denies").isGreaterThan(50);
      assertThat(redis.errorCount()).isZero();
    }
  }

  /**
   * Random calls in an upstream's fair order (calls that enter with random tenants, weights,
   * priority classes, estimates and longest waits; that leave; that are tried through their
   * turns, first or not; turns without a waiting call; settlements) give equal decisions, equal
   * first calls and equal waiting counts on both stores, on the one ticker.
   */
  @ParameterizedTest
  @ValueSource(longs = {21, 22, 23})
  void randomCallsInTheUpstreamsOrderDecideAsInMemory(long draws) {
    ManualTicker ticker = new ManualTicker();
    Random rnd = new Random(draws);
    Upstream u = new Upstream("ordered", new WindowLimit(6, Duration.ofSeconds(1)),
        new ModelTokenLimit(3000, Duration.ofSeconds(2)), null);
    Budget tenant = new Budget("order-tenant", new WindowLimit(5, Duration.ofMillis(800)), null);
    double[] weights = {1, 2, 0.5};
    List<UpstreamTurn[]> waiters = new ArrayList<>(); // per call that entered: memory's, Redis's
    List<UpstreamTurn[]> served = new ArrayList<>();
    Map<String, Integer> memoryIds = new HashMap<>();
    Map<String, Integer> redisIds = new HashMap<>();
    int inTurn = 0;
    int outOfTurn = 0;
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker);
        RedisRateLimitStore redis = redis(ticker).build()) {
      UpstreamOrder mo = memory.upstreamOrder();
      UpstreamOrder ro = redis.upstreamOrder();
      for (int op = 0; op < 400; op++) {
        ticker.advanceMillis(rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(150));
        int kind = rnd.nextInt(10);
        String what = "op " + op;
        if (kind < 3) {
          UpstreamTurn t = new UpstreamTurn("t" + rnd.nextInt(4), weights[rnd.nextInt(3)],
              rnd.nextInt(5) == 0 ? 1 : 0, 50L * rnd.nextInt(20), null);
          Duration wait = Duration.ofMillis(100 + rnd.nextInt(2500));
          String m = mo.enter(u, t, wait).toCompletableFuture().join();
          String r = ro.enter(u, t, wait).toCompletableFuture().join();
          memoryIds.put(m, waiters.size());
          redisIds.put(r, waiters.size());
          waiters.add(new UpstreamTurn[] {t.waiting(m), t.waiting(r)});
        } else if (kind == 3 && !waiters.isEmpty()) {
          UpstreamTurn[] w = waiters.get(rnd.nextInt(waiters.size()));
          mo.leave(u, w[0].waiter()).toCompletableFuture().join();
          ro.leave(u, w[1].waiter()).toCompletableFuture().join();
        } else if (kind == 4 && !served.isEmpty()) {
          UpstreamTurn[] w = served.get(rnd.nextInt(served.size()));
          long actual = rnd.nextInt(1500);
          mo.settled(u, w[0], actual).toCompletableFuture().join();
          ro.settled(u, w[1], actual).toCompletableFuture().join();
        } else {
          UpstreamTurn[] w;
          if (!waiters.isEmpty() && rnd.nextInt(4) != 0) {
            // mostly the first call, as a waiting room tries it; else any call that entered
            Optional<String> first = mo.first(u).toCompletableFuture().join();
            w = waiters.get(first.isPresent() && rnd.nextBoolean() ? memoryIds.get(first.get())
                : rnd.nextInt(waiters.size()));
          } else {
            UpstreamTurn t = new UpstreamTurn("t" + rnd.nextInt(4), weights[rnd.nextInt(3)], 0,
                50L * rnd.nextInt(20), null);
            w = new UpstreamTurn[] {t, t};
          }
          Composition mode = rnd.nextBoolean() ? Composition.SEQUENTIAL
              : Composition.RESERVE_COMMIT;
          Consumption estimate = Consumption.ofCall(w[0].estimate(), 0);
          List<String> keys = List.of(w[0].tenant());
          Reservation expected = memory.reserve(List.of(tenant), keys, 1, estimate, mode, u, w[0]);
          Reservation actual = redis.reserve(List.of(tenant), keys, 1, estimate, mode, u, w[1]);
          what = String.format("op %d: %s waiting %s", op, w[0].tenant(), w[0].waiter());
          assertThat(actual.decision()).as(what).isEqualTo(expected.decision());
          assertSameComponents(expected, actual, what);
          if (expected.decision().allowed()) {
            served.add(w);
            inTurn += w[0].waiter() != null ? 1 : 0;
          } else if (expected.decision().retryAfterMs() == mo.pollInterval().toMillis()) {
            outOfTurn++;
          }
        }
        assertThat(ro.waiting(u).toCompletableFuture().join()).as(what)
            .isEqualTo(mo.waiting(u).toCompletableFuture().join());
        assertThat(ro.first(u).toCompletableFuture().join().map(redisIds::get)).as(what)
            .isEqualTo(mo.first(u).toCompletableFuture().join().map(memoryIds::get));
      }
      assertThat(inTurn).as("waiting calls admitted in turn").isGreaterThan(20);
      assertThat(outOfTurn).as("calls denied out of turn").isGreaterThan(20);
      assertThat(redis.errorCount()).isZero();
    }
  }

  private static ProviderReport randomReport(Random rnd) {
    boolean requests = rnd.nextBoolean();
    boolean tokens = rnd.nextBoolean();
    return new ProviderReport(
        rnd.nextInt(4) == 0 ? (long) 1 + rnd.nextInt(10) : null,
        requests ? (long) rnd.nextInt(5) : null,
        requests ? Duration.ofMillis(rnd.nextInt(1500)) : null,
        rnd.nextInt(4) == 0 ? (long) 1 + rnd.nextInt(3000) : null,
        tokens ? (long) rnd.nextInt(2000) : null,
        tokens ? Duration.ofMillis(rnd.nextInt(1500)) : null,
        rnd.nextInt(5) == 0 ? Duration.ofMillis(rnd.nextInt(800)) : null);
  }

  private static void assertSameComponents(Reservation expected, Reservation actual, String what) {
    if (expected.decision().reason() != Reason.COST_EXCEEDS_CAPACITY) {
      assertThat(expected.components()).as(what).hasSize(expected.levels().size());
    }
    assertThat(actual.components()).as(what).isEqualTo(expected.components());
  }

  /** A random call: a hierarchy or a single budget, a cost and a composition mode. */
  private record RandomCall(List<Budget> levels, List<String> keys, double cost, Composition mode) {

    static RandomCall next(Random rnd) {
      List<Budget> levels = new ArrayList<>();
      List<String> keys = new ArrayList<>();
      pick(rnd, levels, keys);
      double cost = AbstractParityTests.cost(rnd);
      return new RandomCall(levels, keys, cost,
          rnd.nextBoolean() ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT);
    }

    void assertSameDecision(RateLimitStore memory, RateLimitStore redis, int op) {
      Decision expected = memory.acquire(levels, keys, cost, mode);
      assertThat(redis.acquire(levels, keys, cost, mode))
          .as("op %d: %s %s cost %s %s", op, names(levels), keys, cost, mode).isEqualTo(expected);
    }

    /**
     * The same call reserved (no model tokens): equal decisions and equal figures of every
     * component of every level.
     */
    void assertSameReservation(RateLimitStore memory, RateLimitStore redis, int op) {
      Reservation expected = memory.reserve(levels, keys, cost, 0, mode);
      Reservation actual = redis.reserve(levels, keys, cost, 0, mode);
      String what = String.format("op %d: %s %s cost %s %s", op, names(levels), keys, cost, mode);
      assertThat(actual.decision()).as(what).isEqualTo(expected.decision());
      assertSameComponents(expected, actual, what);
    }

    void assertSameStateEvery(int ops, RateLimitStore memory, RateLimitStore redis, int op) {
      if (op % ops == 0) {
        for (int i = 0; i < levels.size(); i++) {
          assertSameState(memory.administration().orElseThrow().inspect(levels.get(i), keys.get(i)),
              redis.administration().orElseThrow().inspect(levels.get(i), keys.get(i)), op);
        }
      }
    }
  }

  /**
   * Equal snapshots, where a fresh one equals none (the Redis store reports fresh keys as
   * untracked; the in-memory store drops them at its next sweep). Tokens may differ in the last
   * bits: a sweep of the in-memory store refills its keys in more steps.
   */
  private static void assertSameState(Optional<KeySnapshot> memory, Optional<KeySnapshot> redis, int op) {
    Optional<KeySnapshot> m = memory.filter(s -> !fresh(s));
    Optional<KeySnapshot> rd = redis.filter(s -> !fresh(s));
    assertThat(rd.isPresent()).as("op %d: %s vs %s", op, memory, redis).isEqualTo(m.isPresent());
    if (rd.isPresent()) {
      KeySnapshot r = rd.get();
      KeySnapshot e = m.get();
      assertThat(r.tokens()).as("op %d", op).isCloseTo(e.tokens(), within(1e-12));
      assertThat(new KeySnapshot(r.budget(), r.key(), r.windowUsed(), r.windowLimit(), e.tokens(),
          r.capacity(), r.nextFreeMs(), r.modelTokensUsed(), r.modelTokenLimit(), r.inFlight(),
          r.concurrencyLimit()))
          .as("op %d", op).isEqualTo(e);
    }
  }

  /** Looks fresh: a model-token window of zero-token entries still counts as tracked in either store. */
  private static boolean fresh(KeySnapshot s) {
    return s.windowUsed() == 0 && s.modelTokensUsed() == 0 && s.inFlight() == 0
        && s.tokens() >= s.capacity() - 1e-9;
  }

  private static void advance(ManualTicker ticker, Random rnd) {
    switch (rnd.nextInt(8)) {
      case 0, 1 -> { } // equal timestamps
      case 2 -> ticker.advanceNanos(1 + rnd.nextInt(1000));
      case 3 -> ticker.advanceNanos(999_999);
      case 4 -> ticker.advance(Duration.ofMillis(250));
      case 5 -> ticker.advance(Duration.ofMillis(rnd.nextInt(400)));
      case 6 -> ticker.advanceNanos(rnd.nextInt(2_000_000_000));
      default -> ticker.advance(Duration.ofMillis(100));
    }
  }

  private static double cost(Random rnd) {
    switch (rnd.nextInt(6)) {
      case 0: return 0.5;
      case 1: return 2.3;
      case 2: return rnd.nextBoolean() ? 1e-3 : 1e-9; // 1e-9: at a unit cost's tolerance
      case 3: return 1 + rnd.nextInt(5); // sometimes above a level's capacity
      default: return 1.0;
    }
  }

  /** A hierarchy org > user > model, or a single budget; each lower key belongs to one org. */
  private static void pick(Random rnd, List<Budget> levels, List<String> keys) {
    String org = "org-" + rnd.nextInt(2);
    String user = org + "/u" + rnd.nextInt(2);
    switch (rnd.nextInt(6)) {
      case 0 -> add(levels, keys, ORG, org);
      case 1 -> {
        add(levels, keys, ORG, org);
        add(levels, keys, USER, user);
      }
      case 2 -> {
        add(levels, keys, ORG, org);
        add(levels, keys, USER, user);
        add(levels, keys, MODEL, user + "/gpt");
      }
      case 3 -> add(levels, keys, WINDOW_ONLY, "w{" + rnd.nextInt(2) + "}:*");
      case 4 -> add(levels, keys, ONE_SHOT, "one-" + rnd.nextInt(2));
      default -> add(levels, keys, MINUTE, "m-" + rnd.nextInt(2));
    }
  }

  private static void add(List<Budget> levels, List<String> keys, Budget b, String key) {
    levels.add(b);
    keys.add(key);
  }

  private static List<String> names(List<Budget> levels) {
    return levels.stream().map(Budget::name).toList();
  }
}
