package io.github.llmratelimiter.core;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

/**
 * Model-checks the in-memory upstream order with Lincheck: every concurrent history of calls
 * entering and leaving the order, turns admitted or denied by the upstream (with and without a
 * waiter), settlements, reads of the first call and of the count, and time steps that end waits,
 * equals some sequential one, so the store checks the order, dequeues the admitted call and counts
 * it in one atomic step with the upstream's decision.
 */
@Param(name = "tenant", gen = IntGen.class, conf = "0:1")
@Param(name = "waiter", gen = IntGen.class, conf = "1:3")
public class UpstreamOrderLincheckTests {

  private final ManualTicker ticker = new ManualTicker();
  private final InMemoryStore store = new InMemoryStore(ticker, 100, 1);
  private final UpstreamOrder order = store.upstreamOrder();
  private final Budget plan = new Budget("plan", WindowLimit.perMinute(100), null);
  private final Upstream upstream = new Upstream("hot", new WindowLimit(3, Duration.ofSeconds(2)),
      null, null);

  /** Creates the state of one scenario. */
  public UpstreamOrderLincheckTests() {}

  private static UpstreamTurn turn(int tenant) {
    return new UpstreamTurn("t" + tenant, tenant + 1, 0, 100, null);
  }

  /** Puts a call of the tenant in the order for a second; the store numbers its calls w1, w2, ... */
  @Operation
  public String enter(@Param(name = "tenant") int tenant) {
    return order.enter(upstream, turn(tenant), Duration.ofSeconds(1)).toCompletableFuture().join();
  }

  /** Decides the turn of waiting call {@code waiter} (w1, w2, ...), of the tenant given. */
  @Operation
  public Decision reserveWaiter(@Param(name = "tenant") int tenant,
      @Param(name = "waiter") int waiter) {
    return store.reserve(List.of(plan), List.of("t" + tenant), 1, Consumption.ofCall(100, 0),
        Composition.SEQUENTIAL, upstream, turn(tenant).waiting("w" + waiter)).decision();
  }

  /** Decides a turn without a waiter. */
  @Operation
  public Decision reserve(@Param(name = "tenant") int tenant) {
    return store.reserve(List.of(plan), List.of("t" + tenant), 1, Consumption.ofCall(100, 0),
        Composition.RESERVE_COMMIT, upstream, turn(tenant)).decision();
  }

  @Operation
  public void leave(@Param(name = "waiter") int waiter) {
    order.leave(upstream, "w" + waiter).toCompletableFuture().join();
  }

  @Operation
  public void settled(@Param(name = "tenant") int tenant) {
    order.settled(upstream, turn(tenant), 400).toCompletableFuture().join();
  }

  @Operation
  public Optional<String> first() {
    return order.first(upstream).toCompletableFuture().join();
  }

  @Operation
  public long waiting() {
    return order.waiting(upstream).toCompletableFuture().join();
  }

  @Operation
  public void advance() {
    ticker.advanceMillis(500);
  }

  @Test
  void theOrderIsCheckedAndLeftAtomicallyWithTheUpstreamsDecision() {
    new ModelCheckingOptions()
        .iterations(3)
        .invocationsPerIteration(40)
        .threads(2)
        .actorsPerThread(3)
        .actorsBefore(2)
        .actorsAfter(1)
        .check(getClass());
  }
}
