package io.github.llmratelimiter.redis;

import io.github.llmratelimiter.core.Ticker;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A {@link Clock} on a store's ticker, for the circuit breaker's open-state wait. */
final class TickerClock extends Clock {

  private final Ticker ticker;

  TickerClock(Ticker ticker) {
    this.ticker = ticker;
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }

  @Override
  public Instant instant() {
    long nanos = ticker.read();
    return Instant.ofEpochSecond(Math.floorDiv(nanos, 1_000_000_000L),
        Math.floorMod(nanos, 1_000_000_000L));
  }
}
