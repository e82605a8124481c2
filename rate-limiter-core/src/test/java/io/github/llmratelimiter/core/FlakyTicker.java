package io.github.llmratelimiter.core;

import java.util.concurrent.atomic.AtomicBoolean;

/** A ticker that reads another one, or throws "clock unavailable" while it is set to fail. */
final class FlakyTicker implements Ticker {

  /** While true, every reading throws. */
  final AtomicBoolean failing = new AtomicBoolean();
  private final Ticker inner;

  FlakyTicker(Ticker inner) {
    this.inner = inner;
  }

  @Override
  public long read() {
    if (failing.get()) {
      throw new IllegalStateException("clock unavailable");
    }
    return inner.read();
  }
}
