package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;

/**
 * The immutable outcome of one call to a limiter.
 *
 * <p>A denied decision is either <em>retryable</em>, with {@link #retryAfterMs()} at least 1 (a
 * client can wait that long and try again), or not, with {@code retryAfterMs} 0: waiting never
 * clears it (a bucket that does not refill, a cost above capacity). A retry of 0 never means "retry
 * now".
 *
 * <p>What a deny reports depends on the {@link Composition}. In {@code SEQUENTIAL} composition, the
 * component that denied (the first in order): its reason, level and wait, as the design copies it.
 * In {@code RESERVE_COMMIT} composition, every component of every level was checked, and the deny
 * reports the one that binds: a component that can never admit the call if there is one (then not
 * retryable), else the one with the longest wait (the first in order on a tie), so that a client
 * that waits {@code retryAfterMs} is admitted if no other traffic arrives.
 *
 * @param allowed whether the call was admitted and charged
 * @param remaining how many more unit-cost calls every budget admits now, after this decision (whole
 *     requests): the smallest over every component of every level (slots for calls in flight
 *     included: the slots left), counting what a sequential deny charged and the levels it never
 *     reached as they stand; 0 for a {@link Reason#COST_EXCEEDS_CAPACITY} deny, which no state is
 *     read for
 * @param retryAfterMs for a retryable deny, the milliseconds (rounded up to the first whole
 *     millisecond at which the call passes: for a bucket, the one at which its refill and admission
 *     test admit the call, never a millisecond later) after which the reported component admits the
 *     call if nothing else arrives: in sequential composition the denying component (a component that
 *     deny charged, or one it never reached, may still deny then), in reserve-then-commit every
 *     component; 0 otherwise. For slots ({@link Reason#CONCURRENCY_LIMIT}) "nothing else" means
 *     no call in flight ends either: the wait until a lease expires, an upper bound
 * @param resetAfterMs the milliseconds (rounded up) until the components of the deciding level (of
 *     every level when allowed) are fully replenished: windows empty, buckets exactly at capacity;
 *     a bucket that does not refill contributes nothing, nor do slots held (they free when their
 *     calls end, which no clock tells); 0 for a {@link Reason#COST_EXCEEDS_CAPACITY} deny, which no
 *     state is read for
 * @param reason why the call was allowed or denied
 * @param retryable whether waiting can ever turn this deny into an allow ({@code true} when
 *     allowed); in reserve-then-commit composition {@code false} whenever any component can never
 *     admit the call; in sequential composition as the denying component says (a full window
 *     denies first, before a bucket that never refills is looked at)
 * @param level the name of the budget that decided: the denying (or binding) level of a hierarchy,
 *     or the one with the fewest remaining calls when allowed
 */
public record Decision(
    boolean allowed,
    long remaining,
    long retryAfterMs,
    long resetAfterMs,
    Reason reason,
    boolean retryable,
    String level) {

  /**
   * Validates the decision's invariants.
   *
   * @throws IllegalArgumentException if the fields contradict each other
   */
  public Decision {
    Args.notNull("reason", reason);
    Args.notNull("level", level);
    Args.notNegative("remaining", remaining);
    Args.notNegative("retryAfterMs", retryAfterMs);
    Args.notNegative("resetAfterMs", resetAfterMs);
    if (allowed != (reason == Reason.OK)) {
      throw new IllegalArgumentException(
          "reason must be OK exactly when allowed, but allowed=" + allowed + " and reason=" + reason);
    }
    if (allowed && (retryAfterMs != 0 || !retryable)) {
      throw new IllegalArgumentException(
          "an allowed decision has retryAfterMs 0 and is retryable, but retryAfterMs="
              + retryAfterMs + " and retryable=" + retryable);
    }
    if (!allowed && retryable && retryAfterMs < 1) {
      throw new IllegalArgumentException(
          "a retryable deny waits at least 1 ms, but retryAfterMs=" + retryAfterMs);
    }
    if (!retryable && retryAfterMs != 0) {
      throw new IllegalArgumentException(
          "a deny that waiting cannot clear has retryAfterMs 0, but retryAfterMs=" + retryAfterMs);
    }
  }

  /**
   * Returns an allowed decision.
   *
   * @param remaining unit-cost calls still admitted
   * @param resetAfterMs milliseconds until the budgets are full again
   * @param level the binding budget's name
   * @return an allowed decision
   */
  public static Decision allow(long remaining, long resetAfterMs, String level) {
    return new Decision(true, remaining, 0, resetAfterMs, Reason.OK, true, level);
  }

  /**
   * Returns a deny that clears by waiting {@code retryAfterMs}.
   *
   * @param reason the denying (or binding) component's reason
   * @param remaining unit-cost calls every budget still admits
   * @param retryAfterMs the wait, at least 1
   * @param resetAfterMs milliseconds until the budgets are full again
   * @param level the denying budget's name
   * @return a retryable deny
   */
  public static Decision retryableDeny(
      Reason reason, long remaining, long retryAfterMs, long resetAfterMs, String level) {
    return new Decision(false, remaining, retryAfterMs, resetAfterMs, reason, true, level);
  }

  /**
   * Returns a deny that waiting never clears.
   *
   * @param reason the denying (or binding) component's reason
   * @param remaining unit-cost calls every budget still admits
   * @param resetAfterMs milliseconds until the budgets are full again
   * @param level the denying budget's name
   * @return a final deny, with {@code retryAfterMs} 0
   */
  public static Decision finalDeny(Reason reason, long remaining, long resetAfterMs, String level) {
    return new Decision(false, remaining, 0, resetAfterMs, reason, false, level);
  }

  /**
   * Returns {@code !allowed()}.
   *
   * @return whether the call was denied
   */
  public boolean denied() {
    return !allowed;
  }
}
