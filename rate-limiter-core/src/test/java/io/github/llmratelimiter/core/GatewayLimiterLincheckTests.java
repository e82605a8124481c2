package io.github.llmratelimiter.core;

import java.time.Duration;
import java.util.List;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

/**
 * Model-checks the gateway's guarantee with Lincheck: every concurrent history of decisions and time
 * steps equals some sequential history, so no caller of a key interleaves
 * between the window and the bucket, and a hierarchy's shared level is decided atomically.
 */
@Param(name = "key", gen = IntGen.class, conf = "0:1")
@Param(name = "cost", gen = IntGen.class, conf = "1:3")
public class GatewayLimiterLincheckTests {

  /** Creates the state of one scenario. */
  public GatewayLimiterLincheckTests() {}

  private final ManualTicker ticker = new ManualTicker();
  // no background maintenance: only the threads Lincheck runs touch the store
  private final RateLimitStore store = new InMemoryStore(
      ticker, InMemoryStore.DEFAULT_MAX_KEYS, InMemoryStore.DEFAULT_MAINTENANCE_STEP);
  private final GatewayLimiter sequential = GatewayLimiter.builder().name("seq")
      .requestsPerWindow(3, Duration.ofSeconds(1)).burst(2, 2)
      .composition(Composition.SEQUENTIAL).store(store).build();
  private final GatewayLimiter reserve = GatewayLimiter.builder().name("res")
      .requestsPerWindow(3, Duration.ofSeconds(1)).burst(2, 2)
      .composition(Composition.RESERVE_COMMIT).store(store).build();
  private final HierarchicalLimiter hierarchy = HierarchicalLimiter.builder()
      .level(Budget.of("org", new WindowLimit(3, Duration.ofSeconds(1)), new BucketLimit(2, 2)))
      .level(new Budget("key", new WindowLimit(2, Duration.ofSeconds(1)), null))
      .composition(Composition.RESERVE_COMMIT).store(store).build();

  @Operation
  public Decision sequential(@Param(name = "key") int key, @Param(name = "cost") int halves) {
    return sequential.allow("k" + key, halves / 2.0);
  }

  @Operation
  public boolean trySequential(@Param(name = "key") int key, @Param(name = "cost") int halves) {
    return sequential.tryAcquire("k" + key, halves / 2.0);
  }

  @Operation
  public Decision reserve(@Param(name = "key") int key, @Param(name = "cost") int halves) {
    return reserve.allow("k" + key, halves / 2.0);
  }

  @Operation
  public Decision hierarchy(@Param(name = "key") int key) {
    return hierarchy.allow(List.of("acme", "k" + key));
  }

  @Operation
  public boolean tryHierarchy(@Param(name = "key") int key) {
    return hierarchy.tryAcquire(List.of("acme", "k" + key));
  }

  @Operation
  public void advance() {
    ticker.advanceMillis(400);
  }

  @Test
  void decisionsAreLinearizable() {
    new ModelCheckingOptions()
        .iterations(15)
        .invocationsPerIteration(300)
        .threads(2)
        .actorsPerThread(3)
        .actorsBefore(2)
        .check(getClass());
  }
}
