package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The estimate of the server's clock never runs ahead of it, and follows it down within periods. */
class RedisClockTests {

  private static final long MS = 1_000_000L;

  @Test
  void unknownUntilTheFirstReply() {
    assertThat(new RedisClock(0).notAfter(5 * MS)).isZero();
  }

  @Test
  void theTightestLowerBoundOfTheOffsetWins() {
    RedisClock clock = new RedisClock(0);
    // server time 1,000,000 µs read before the reply arrived at local 500 ms: offset >= 500,000 µs
    clock.sample(1_000_000, 500 * MS);
    assertThat(clock.notAfter(600 * MS)).isEqualTo(600_000 + 500_000);
    clock.sample(1_000_000, 550 * MS); // a later arrival of the same time: a looser bound
    assertThat(clock.notAfter(600 * MS)).isEqualTo(1_100_000);
    clock.sample(1_200_000, 600 * MS); // a tighter bound
    assertThat(clock.notAfter(600 * MS)).isEqualTo(1_200_000);
  }

  @Test
  void aClockThatFallsBehindIsFollowedWithinTwoPeriods() {
    RedisClock clock = new RedisClock(0);
    clock.sample(2_000_000, 0);
    long period = RedisClock.PERIOD_NANOS;
    // the server's clock now runs 1 s behind what it did: only samples of the last periods count
    clock.sample(1_000_000 + period / 1000, period);
    assertThat(clock.notAfter(period)).isEqualTo(period / 1000 + 2_000_000);
    clock.sample(1_000_000 + 2 * period / 1000, 2 * period);
    assertThat(clock.notAfter(2 * period)).isEqualTo(2 * period / 1000 + 1_000_000);
  }
}
