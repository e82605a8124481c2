package io.github.llmratelimiter.benchmarks.inprocess;

import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;

/**
 * The result checks of the benchmarks: a case that gets the wrong answer throws, which fails the
 * JMH run. The throwing branch sits in a method of its own so that it stays out of the hot path.
 */
final class Check {

  private Check() {}

  /** Returns {@code d} if it allowed the call, else throws. */
  static Decision allowed(Decision d) {
    if (!d.allowed()) {
      throw wrong("an allowed case was denied", d);
    }
    return d;
  }

  /** Returns {@code d} if it denied the call for {@code reason}, else throws. */
  static Decision denied(Decision d, Reason reason) {
    if (d.reason() != reason) {
      throw wrong("a case that must be denied with " + reason + " was not", d);
    }
    return d;
  }

  /** Returns {@code true} if {@code allowed}, else throws. */
  static boolean allowed(boolean allowed) {
    if (!allowed) {
      throw wrong("an allowed case was denied", "false");
    }
    return true;
  }

  /** Returns {@code false} if not {@code allowed}, else throws. */
  static boolean denied(boolean allowed) {
    if (allowed) {
      throw wrong("a denied case was allowed", "true");
    }
    return false;
  }

  private static IllegalStateException wrong(String what, Object result) {
    return new IllegalStateException(what + ": " + result);
  }
}
