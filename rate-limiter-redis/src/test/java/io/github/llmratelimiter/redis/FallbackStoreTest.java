package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.WindowLimit;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The local fallback's shares: each limit divided among the live instances, continuing from what
 * the instance admitted through Redis, also when an instance joins or leaves. No Redis here.
 */
class FallbackStoreTest {

  private static final Budget TEN = new Budget("rpm", WindowLimit.perMinute(10), null);

  private final ManualTicker ticker = new ManualTicker();

  private static LuaRateLimitStore.Call call(Budget budget, String key, double cost) {
    return new LuaRateLimitStore.Call(List.of(budget), List.of(key), cost, 0, false,
        Composition.SEQUENTIAL, null);
  }

  private static int admitted(FallbackStore fallback, Budget budget, String key, int calls) {
    int n = 0;
    for (int i = 0; i < calls; i++) {
      if (fallback.decide(call(budget, key, 1)).decision().allowed()) {
        n++;
      }
    }
    return n;
  }

  @Test
  void aSingleInstanceContinuesFromWhatRedisAdmitted() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(1);
      for (int i = 0; i < 7; i++) {
        fallback.mirror(call(TEN, "t", 1));
      }
      assertThat(admitted(fallback, TEN, "t", 10)).isEqualTo(3);
    }
  }

  @Test
  void eachOfNInstancesTakesItsShareLessItsOwnAdmissions() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(3);
      fallback.mirror(call(TEN, "t", 1));
      assertThat(admitted(fallback, TEN, "t", 10)).as("floor(10 / 3) - 1").isEqualTo(2);
      assertThat(admitted(fallback, TEN, "fresh", 10)).isEqualTo(3);
    }
  }

  @Test
  void anInstanceJoiningOrLeavingKeepsTheAdmissionsAlreadyCharged() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(2);
      for (int i = 0; i < 4; i++) {
        fallback.mirror(call(TEN, "up", 1));
        fallback.mirror(call(TEN, "down", 1));
      }
      fallback.instances(3); // the share for 3 was charged all along: floor(10 / 3) = 3, 3 held
      assertThat(admitted(fallback, TEN, "up", 10)).isZero();
      fallback.instances(2); // back: the share of 5 holds 4
      assertThat(admitted(fallback, TEN, "down", 10)).isEqualTo(1);
    }
  }

  @Test
  void aCostAboveTheShareButWithinTheLimitIsARetryableDeny() {
    Budget bucket = new Budget("burst", null, new BucketLimit(4, 1));
    try (FallbackStore fallback = new FallbackStore(ticker, 1500)) {
      fallback.instances(2);
      Decision d = fallback.decide(call(bucket, "t", 3)).decision();
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(d.retryable()).isTrue();
      assertThat(d.retryAfterMs()).isEqualTo(1500);
      assertThat(fallback.decide(call(bucket, "t", 2)).decision().allowed()).isTrue();
    }
  }

  @Test
  void beforeTheFirstLiveCountEveryCallIsARetryableDenyButAdmissionsAreKept() {
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      for (int i = 0; i < 4; i++) {
        fallback.mirror(call(TEN, "t", 1));
      }
      Decision d = fallback.decide(call(TEN, "t", 1)).decision();
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(d.retryable()).isTrue();
      fallback.instances(2);
      assertThat(admitted(fallback, TEN, "t", 10)).as("floor(10 / 2) - 4").isEqualTo(1);
    }
  }

  @Test
  void aShareIsNeverBelowOneCall() {
    Budget one = new Budget("one", WindowLimit.perMinute(1), new BucketLimit(1, 0.5));
    try (FallbackStore fallback = new FallbackStore(ticker, 1000)) {
      fallback.instances(4);
      assertThat(admitted(fallback, one, "t", 3)).isEqualTo(1);
    }
  }
}
