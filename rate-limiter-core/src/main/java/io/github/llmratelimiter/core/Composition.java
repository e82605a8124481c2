package io.github.llmratelimiter.core;

/** How a limiter composes the sliding-window log and the token bucket (and the levels of a hierarchy). */
public enum Composition {

  /**
   * The default order, under one lock: the window first, then the bucket (then the model tokens).
   * An RPM deny charges nothing; a burst deny leaves the window's timestamp counted (it is not
   * rolled back). Slots for calls in flight are checked before the window, so a {@link
   * Reason#CONCURRENCY_LIMIT} deny charges nothing at its level either, and are taken only when
   * the whole call is admitted. In a hierarchy the levels run in order, and the levels before the
   * denying one stay charged. A deny reports the denying component's reason and wait: a full
   * window denies with {@link Reason#RPM_LIMIT}, retryable, before the bucket runs, even when the
   * bucket never refills and can no longer pay for the call.
   */
  SEQUENTIAL,

  /**
   * Reserve, then commit: every budget of every level is checked first, and all are charged only
   * if all admit. A deny charges nothing anywhere and reports the component that binds: one that
   * can never admit the call (not retryable), else the one with the longest wait.
   */
  RESERVE_COMMIT
}
