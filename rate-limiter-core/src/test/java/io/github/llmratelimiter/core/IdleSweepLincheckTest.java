package io.github.llmratelimiter.core;

import java.time.Duration;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.junit.jupiter.api.Test;

/**
 * Model-checks that dropping idle keys never changes a decision: a sweep that retires a key's
 * entry while a caller is about to charge it must not let the charge land on the dropped entry
 * (which would hand the key a fresh budget).
 */
public class IdleSweepLincheckTest {

  private final ManualTicker ticker = new ManualTicker();
  private final InMemoryStore store = new InMemoryStore(ticker, 100);
  private final GatewayLimiter limiter = GatewayLimiter.builder().name("gw")
      .requestsPerWindow(3, Duration.ofSeconds(1)).burst(3, 1).store(store).build();

  /** Creates the state of one scenario. */
  public IdleSweepLincheckTest() {}

  @Operation
  public Decision allow() {
    return limiter.allow("k");
  }

  @Operation
  public void sweep() {
    store.table(limiter.budget()).maybeSweep(ticker.read(), true);
  }

  @Operation
  public void advance() {
    ticker.advanceMillis(1000);
  }

  @Test
  void sweepingNeverChangesADecision() {
    new ModelCheckingOptions()
        .iterations(20)
        .invocationsPerIteration(300)
        .threads(2)
        .actorsPerThread(2)
        .actorsBefore(1)
        .actorsAfter(3)
        .check(getClass());
  }
}
