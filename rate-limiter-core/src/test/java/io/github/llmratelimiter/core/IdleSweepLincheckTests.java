package io.github.llmratelimiter.core;

import java.time.Duration;
import java.util.List;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

/**
 * Model-checks that dropping idle keys never changes a decision: a maintenance step that retires a
 * key's entry while a caller is about to charge it must not let the charge land on the dropped
 * entry (which would hand the key a fresh budget). Steps examine one entry each, so a pass over the
 * three tables (the gateway's, the hierarchy's two levels) spans many operations.
 */
@Param(name = "key", gen = IntGen.class, conf = "0:1")
public class IdleSweepLincheckTests {

  private final ManualTicker ticker = new ManualTicker();
  private final InMemoryStore store = new InMemoryStore(ticker, 100, 1);
  private final GatewayLimiter limiter = GatewayLimiter.builder().name("gw")
      .requestsPerWindow(3, Duration.ofSeconds(1)).burst(3, 1).store(store).build();
  private final HierarchicalLimiter hierarchy = HierarchicalLimiter.builder()
      .level(Budget.of("org", new WindowLimit(3, Duration.ofSeconds(1)), new BucketLimit(2, 2)))
      .level(new Budget("key", new WindowLimit(2, Duration.ofSeconds(1)), null))
      .store(store).build();

  /** Creates the state of one scenario. */
  public IdleSweepLincheckTests() {}

  @Operation
  public Decision allow(@Param(name = "key") int key) {
    return limiter.allow("k" + key);
  }

  @Operation
  public Decision hierarchy(@Param(name = "key") int key) {
    return hierarchy.allow(List.of("acme", "k" + key));
  }

  @Operation
  public void cleanUp() {
    store.cleanUp(); // its count depends on which step holds a table: not part of the model
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
        .actorsPerThread(3)
        .actorsBefore(2)
        .actorsAfter(3)
        .check(getClass());
  }
}
