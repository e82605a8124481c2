package io.github.llmratelimiter.core;

/** How a limiter composes the sliding-window log and the token bucket (and the levels of a hierarchy). */
public enum Composition {

  /**
   * The seed's order, under one lock: the window first, then the bucket. An RPM deny charges
   * nothing; a burst deny leaves the window's timestamp counted (it is not rolled back). In a
   * hierarchy the levels run in order, and the levels before the denying one stay charged.
   */
  SEQUENTIAL,

  /**
   * Reserve, then commit: every budget of every level is checked first, and all are charged only
   * if all admit. A deny charges nothing anywhere.
   */
  RESERVE_COMMIT
}
