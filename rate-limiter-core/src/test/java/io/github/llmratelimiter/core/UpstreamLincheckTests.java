package io.github.llmratelimiter.core;

import java.time.Duration;
import java.util.List;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

/**
 * Model-checks an upstream's admission with Lincheck: every concurrent history of calls from two
 * tenants on two plans (both compositions), provider reports (a remaining count, a retry, a lower
 * limit), releases of the upstream's slots, status reads and time steps equals some sequential
 * one, so the upstream's window, slots and reported counts are checked and charged in one atomic
 * step with the tenants' levels, and a report never lands between the check and the charge.
 */
@Param(name = "tenant", gen = IntGen.class, conf = "0:1")
@Param(name = "kind", gen = IntGen.class, conf = "0:2")
@Param(name = "id", gen = IntGen.class, conf = "1:4")
public class UpstreamLincheckTests {

  private final ManualTicker ticker = new ManualTicker();
  private final InMemoryStore store = new InMemoryStore(ticker, 100, 1);
  private final Budget free = new Budget("plan", new WindowLimit(2, Duration.ofSeconds(2)),
      new BucketLimit(2, 1));
  private final Budget pro = free.variant(new WindowLimit(3, Duration.ofSeconds(2)),
      new BucketLimit(3, 1), null, null);
  private final Upstream upstream = new Upstream("hot", new WindowLimit(3, Duration.ofSeconds(2)),
      null, new ConcurrencyLimit(2, Duration.ofSeconds(1)));

  /** Creates the state of one scenario. */
  public UpstreamLincheckTests() {}

  @Operation
  public Decision reserve(@Param(name = "tenant") int tenant) {
    return store.reserve(List.of(tenant == 0 ? free : pro), List.of("t" + tenant), 1,
        Consumption.ofCall(0, 0),
        tenant == 0 ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT, upstream).decision();
  }

  @Operation
  public void report(@Param(name = "kind") int kind) {
    store.report(upstream, switch (kind) {
      case 0 -> new ProviderReport(null, 1L, Duration.ofSeconds(1), null, null, null, null);
      case 1 -> new ProviderReport(null, null, null, null, null, null, Duration.ofMillis(500));
      default -> new ProviderReport(2L, null, null, null, null, null, null);
    });
  }

  /**
   * Releases reservation {@code id} (the store numbers every reservation with an upstream, 1, 2, 3
   * and on, in the order it decides them): frees its upstream slot if it holds one.
   */
  @Operation
  public void release(@Param(name = "id") int id) {
    store.release(new Reservation(Decision.allow(0, 0, "plan"), List.of(free, upstream.budget()),
        List.of("t0", "hot"), 0, id, 0, 0));
  }

  @Operation
  public UpstreamStatus status() {
    return store.upstreamStatus(upstream);
  }

  @Operation
  public void advance() {
    ticker.advanceMillis(500);
  }

  @Test
  void theUpstreamIsDecidedAtomicallyWithTheTenants() {
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
