package io.github.llmratelimiter.benchmarks.redis;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import org.junit.jupiter.api.Test;

class EmptyOrderTests {

  @Test
  void theOrderAfterCallsInTurnHoldsTheirServiceAndFailsOnAnyOtherCount() throws Exception {
    try (RedisLimiter redis = new RedisLimiter()) {
      assertThatIllegalStateException().isThrownBy(() -> redis.verifyOrder(0, true))
          .withMessageContaining("not opened");
      redis.openOrder();
      for (int i = 0; i < RedisStoreBenchmark.KEY_COUNT; i++) {
        redis.reservedInTurn(true, "tenant-" + i);
      }
      redis.reservedInTurn(true, "tenant-0");
      long decisions = RedisStoreBenchmark.KEY_COUNT + 1;
      assertThatCode(() -> redis.verifyOrder(decisions, true)).doesNotThrowAnyException();
      // a call not counted, or one counted that was not made, fails the check
      assertThatIllegalStateException().isThrownBy(() -> redis.verifyOrder(decisions - 1, true))
          .withMessageContaining("last-left counter 100100 (100000 expected)");
      assertThatIllegalStateException().isThrownBy(() -> redis.verifyOrder(decisions + 1, true))
          .withMessageContaining("(100200 expected)");
    }
  }

  @Test
  void aTenantCounterWrittenWhileNoneWaitsFailsTheCheck() throws Exception {
    try (RedisLimiter redis = new RedisLimiter()) {
      redis.openOrder();
      for (int i = 0; i < 10; i++) {
        redis.reservedInTurn(false, "tenant-" + i);
      }
      assertThatCode(() -> redis.verifyOrder(10, false)).doesNotThrowAnyException();
      String mark = redis.info.commands().keys("*:o:l").get(0); // a tenant counted on its own
      redis.info.commands().hset(mark.substring(0, mark.length() - 1) + "c", "x", "1");
      assertThatIllegalStateException().isThrownBy(() -> redis.verifyOrder(10, false))
          .withMessageContaining("(none expected)");
    }
  }
}
