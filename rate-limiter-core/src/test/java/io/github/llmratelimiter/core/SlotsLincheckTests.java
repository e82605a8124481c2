package io.github.llmratelimiter.core;

import java.time.Duration;
import java.util.List;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

/**
 * Model-checks the slots of a concurrency budget with Lincheck: every concurrent history of
 * reservations, releases (by reservation id: of a call that holds slots, of a denied one, twice),
 * plan changes (a variant with another limit), inspections, maintenance steps and time steps
 * equals some sequential one, so two callers never take one slot, a release never frees another
 * call's slot, and a lease expires exactly on time.
 */
@Param(name = "plan", gen = IntGen.class, conf = "0:1")
@Param(name = "id", gen = IntGen.class, conf = "1:4")
public class SlotsLincheckTests {

  private final ManualTicker ticker = new ManualTicker();
  // maintenance only when an operation runs it, one entry per step
  private final InMemoryStore store = new InMemoryStore(ticker, 100, 1);
  private final Budget free = Budget.of("org", new WindowLimit(4, Duration.ofSeconds(2)),
      new BucketLimit(3, 1)).withConcurrency(new ConcurrencyLimit(1, Duration.ofSeconds(1)));
  private final Budget pro = free.variant(free.window(), free.bucket(), null,
      new ConcurrencyLimit(2, Duration.ofMillis(1500)));
  private final Budget key = new Budget("key", null, null, null, ConcurrencyLimit.of(2));
  /** Creates the state of one scenario. */
  public SlotsLincheckTests() {}

  @Operation
  public Decision reserve(@Param(name = "plan") int plan) {
    return store.reserve(List.of(plan == 0 ? free : pro, key), List.of("acme", "k"), 1, 0,
        plan == 0 ? Composition.SEQUENTIAL : Composition.RESERVE_COMMIT).decision();
  }

  /**
   * Releases reservation {@code id} (the store numbers every reservation on these levels, 1, 2, 3
   * and on, in the order it decides them): frees its slots if it holds any, else nothing.
   */
  @Operation
  public void release(@Param(name = "id") int id) {
    store.release(new Reservation(Decision.allow(0, 0, "org"), List.of(free, key),
        List.of("acme", "k"), 0, id, 0, 0));
  }

  /** The slots the org holds now (the key's are the same calls'). */
  @Operation
  public long inFlight() {
    return admin(store).inspect(free, "acme").map(KeySnapshot::inFlight).orElse(0L);
  }

  @Operation
  public void cleanUp() {
    store.cleanUp();
  }

  @Operation
  public void advance() {
    ticker.advanceMillis(500);
  }

  @Test
  void slotsAreTakenAndGivenBackAtomically() {
    new ModelCheckingOptions()
        .iterations(8)
        .invocationsPerIteration(150)
        .threads(2)
        .actorsPerThread(3)
        .actorsBefore(2)
        .actorsAfter(2)
        .check(getClass());
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
