package io.github.llmratelimiter.core;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

/**
 * Model-checks quotas with Lincheck: every concurrent history of reservations on two levels with
 * quotas (under two plans, both compositions), settlements of the latest reservation (with more,
 * less or nothing), inspections, and the wall clock passing a period's end equals some sequential
 * one. So a quota is never charged past its limit by concurrent estimates, a settlement is never
 * lost or applied twice, and each threshold is reported by exactly one decision per period.
 */
@Param(name = "plan", gen = IntGen.class, conf = "0:1")
@Param(name = "tokens", gen = IntGen.class, conf = "1:3")
public class QuotaLincheckTests {

  private final ManualTicker ticker = new ManualTicker();
  private final ManualClock clock = new ManualClock(Instant.parse("2026-01-31T23:59:58Z"));
  private final InMemoryStore store = new InMemoryStore(ticker, clock, 100, 1);
  private final Budget org = new Budget("org", null, null, null, null,
      List.of(QuotaLimit.of("monthly", QuotaUnit.TOKENS, 6, QuotaPeriod.MONTH)
          .withThresholds(50, 100)), null);
  private final Budget free = new Budget("key", new WindowLimit(4, Duration.ofSeconds(10)), null,
      null, null, List.of(QuotaLimit.of("daily", QuotaUnit.REQUESTS, 2, QuotaPeriod.DAY)
          .withThresholds(100)), null);
  private final Budget pro = free.withQuotas(List.of(
      QuotaLimit.of("daily", QuotaUnit.REQUESTS, 3, QuotaPeriod.DAY).withThresholds(100)));
  /** A call admitted before the scenario starts, which {@link #settle} settles once. */
  private final Reservation first;
  private final AtomicBoolean settled = new AtomicBoolean();

  /** Creates the state of one scenario: one call of 1 token admitted. */
  public QuotaLincheckTests() {
    first = store.reserve(List.of(org, free), List.of("acme", "k"), 1, new Consumption(1, 1, 0),
        Composition.RESERVE_COMMIT);
  }

  /** Reserves {@code tokens} under a plan; returns the verdict, the uses and the crossings. */
  @Operation
  public String reserve(@Param(name = "plan") int plan, @Param(name = "tokens") int tokens) {
    Reservation r = store.reserve(List.of(org, plan == 0 ? free : pro), List.of("acme", "k"), 1,
        new Consumption(1, tokens, 0),
        plan == 0 ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT);
    StringBuilder b = new StringBuilder(r.decision().reason().name());
    for (QuotaStatus s : r.quotas()) {
      b.append(' ').append(s.quota().name()).append('=').append(s.used()).append(s.crossed());
    }
    return b.toString();
  }

  /**
   * Settles the call admitted first with {@code tokens} (1: it failed, all refunded), in the period
   * it was charged in; only the first settlement does anything (a later one waits for it, so
   * that it does not return before the settlement it defers to).
   */
  @Operation
  public void settle(@Param(name = "tokens") int tokens) {
    synchronized (settled) {
      if (settled.compareAndSet(false, true)) {
        store.reconcile(first, tokens == 1 ? Consumption.NONE : Consumption.ofCall(tokens, 0));
      }
    }
  }

  /** What the org used this month. */
  @Operation
  public long orgUsed() {
    return store.administration().orElseThrow().quotas(org, "acme").get(0).used();
  }

  /** What the key used today. */
  @Operation
  public long keyUsed() {
    return store.administration().orElseThrow().quotas(free, "k").get(0).used();
  }

  /** The wall clock passes a second: the second one passes the day's and the month's end. */
  @Operation
  public void tick() {
    clock.advance(Duration.ofSeconds(1));
  }

  @Test
  void quotasAreCheckedChargedAndSettledAtomically() {
    new ModelCheckingOptions()
        .iterations(8)
        .invocationsPerIteration(150)
        .threads(2)
        .actorsPerThread(3)
        .actorsBefore(2)
        .actorsAfter(2)
        .check(getClass());
  }
}
