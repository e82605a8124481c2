package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.benchmarks.report.LoadFigure;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.redis.RedisRateLimitStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * What renewing the slots of calls in flight costs Redis: one gateway instance (a {@link
 * RedisRateLimitStore} on its own {@code redis-server}) holds {@code k} calls in flight, each on a
 * key of its own with a slot each, and renews them on its own timer, every third of a slot lease
 * of {@value #LEASE_MILLIS} ms, for the measured period; nothing else runs. Measured per {@code
 * k}: the renewal scripts per second and the server's time in them ({@code calls} and {@code
 * usec} of {@code EVALSHA} in {@code INFO commandstats}: the scripts' runs, without reading the
 * commands and writing the replies), which the idle server's own timers do not blur as its
 * {@code INFO cpu} would at a few scripts a second.
 *
 * <p>The lease is shorter than the default (5 s) so that a short run holds enough renewals; a
 * renewal's work depends on the slots it renews, not on the lease, so the cost per second at the
 * default lease is the cost per renewal times {@code 3 / 5} per second.
 */
public final class SlotRenewalRun {

  /** The slot lease while measured. */
  static final long LEASE_MILLIS = 300;
  /** The calls in flight of each case. */
  static final int[] CALLS_IN_FLIGHT = {1, 10, 100, 1_000};

  private SlotRenewalRun() {}

  /**
   * Runs every case.
   *
   * @param measure each case's measured period
   * @return one figure per case: {@link LoadFigure#REDIS_SLOT_RENEWALS}, its concurrency the calls in
   *     flight, its calls the renewal scripts, its server CPU the server's time in them
   * @throws IllegalStateException if a call is denied or no renewal runs
   */
  public static List<LoadFigure> run(Duration measure) {
    List<LoadFigure> figures = new ArrayList<>();
    for (int k : CALLS_IN_FLIGHT) {
      figures.add(run(k, measure));
    }
    return figures;
  }

  private static LoadFigure run(int k, Duration measure) {
    Budget slots = new Budget("slots", null, null, null,
        new ConcurrencyLimit(1, ConcurrencyLimit.DEFAULT_LEASE_TIMEOUT));
    try (RedisServer server = RedisServer.start();
        RedisInfo info = new RedisInfo(server.uri());
        RedisRateLimitStore store = RedisLimiter.measured(server)
            .slotLease(Duration.ofMillis(LEASE_MILLIS))
            .build()) {
      List<Reservation> held = new ArrayList<>(k);
      for (int i = 0; i < k; i++) {
        Reservation r = store.reserve(List.of(slots), List.of("tenant-" + i), 1, 0,
            Composition.RESERVE_COMMIT);
        if (!r.decision().allowed()) {
          throw new IllegalStateException("call " + i + " was denied: " + r.decision());
        }
        held.add(r);
      }
      info.resetStats();
      long start = System.nanoTime();
      LockSupport.parkNanos(measure.toNanos()); // the store's own timer renews meanwhile
      double seconds = (System.nanoTime() - start) / 1e9;
      String stats = info.commandStats();
      long renewals = RedisInfo.calls(stats, "evalsha");
      if (renewals == 0) {
        throw new IllegalStateException("no renewal ran in " + measure + " with " + k
            + " calls in flight");
      }
      held.forEach(store::release);
      double busy = RedisInfo.usec(stats, "evalsha") / 1e6;
      LoadFigure f = new LoadFigure(LoadFigure.REDIS_SLOT_RENEWALS,
          String.format(Locale.ROOT, "%,d calls in flight, one key each, lease %d ms", k,
              LEASE_MILLIS),
          k, seconds, renewals, renewals / seconds, Double.NaN, Double.NaN,
          busy / seconds * 100, Double.NaN);
      System.out.println(f);
      return f;
    }
  }
}
