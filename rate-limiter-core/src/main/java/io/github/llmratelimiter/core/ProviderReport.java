package io.github.llmratelimiter.core;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What a provider said about an upstream's limits in one response: the rate-limit headers of
 * OpenAI ({@code x-ratelimit-limit-requests}, {@code x-ratelimit-remaining-tokens}, {@code
 * x-ratelimit-reset-requests}, ...) and Azure, and the {@code retry-after} of a 429. Every field is
 * optional: a provider may send some of them, or none.
 *
 * <p>A store applies a report to the upstream's state for every caller ({@link
 * RateLimitStore#report}), at the store's time of the report:
 * <ul>
 *   <li><b>Remaining</b>: {@code remainingRequests} with {@code resetRequests} means that until the
 *       reset, the upstream admits at most that many more calls (counting every call admitted after
 *       the report); 0 closes it for that long. {@code remainingTokens} with {@code resetTokens}
 *       likewise caps the estimates of the calls admitted until then. A remaining count without
 *       its reset is ignored (nothing says how long it holds).
 *   <li><b>Limits</b>: a {@code limitRequests} or {@code limitTokens} below the upstream's
 *       configured limit replaces it until a later report states another (never above the
 *       configured one).
 *   <li><b>Retry</b>: {@code retryAfter} (a provider's 429) closes the upstream until then: no call
 *       is admitted before it, on any instance.
 *   <li><b>Probe</b>: once a retry or a count at 0 stops holding, the first call admitted goes
 *       alone until the next report or {@link Upstream#PROBE} ({@link Reason#UPSTREAM_LIMIT} for
 *       the others, their wait the probe's time left); after {@link Upstream#SILENCE} without a
 *       report, likewise, but only among the calls waiting in the upstream's order; every report
 *       ends the probe.
 * </ul>
 * A call the upstream's reported state denies gets {@link Reason#UPSTREAM_LIMIT}, with the time
 * until the state that denies it lapses as its wait.
 *
 * @param limitRequests the requests per window the provider allows, or {@code null}; at least 1
 * @param remainingRequests the requests left in the provider's window, or {@code null}; at least 0
 * @param resetRequests how long until {@code remainingRequests} no longer holds, or {@code null};
 *     not negative
 * @param limitTokens the model tokens per window the provider allows, or {@code null}; at least 1
 * @param remainingTokens the model tokens left, or {@code null}; at least 0
 * @param resetTokens how long until {@code remainingTokens} no longer holds, or {@code null}; not
 *     negative
 * @param retryAfter how long the provider asks callers to wait, or {@code null}; not negative
 */
public record ProviderReport(
    @Nullable Long limitRequests,
    @Nullable Long remainingRequests,
    @Nullable Duration resetRequests,
    @Nullable Long limitTokens,
    @Nullable Long remainingTokens,
    @Nullable Duration resetTokens,
    @Nullable Duration retryAfter) {

  /** A report that says nothing. */
  public static final ProviderReport EMPTY =
      new ProviderReport(null, null, null, null, null, null, null);

  /**
   * Validates the report.
   *
   * @throws IllegalArgumentException if a limit is below 1, a remaining count is negative or a
   *     duration is negative
   */
  public ProviderReport {
    atLeast("limitRequests", limitRequests, 1);
    atLeast("remainingRequests", remainingRequests, 0);
    notNegative("resetRequests", resetRequests);
    atLeast("limitTokens", limitTokens, 1);
    atLeast("remainingTokens", remainingTokens, 0);
    notNegative("resetTokens", resetTokens);
    notNegative("retryAfter", retryAfter);
  }

  /**
   * Tells whether the report says nothing a store would apply.
   *
   * @return whether no limit, no remaining count with its reset and no retry is set
   */
  public boolean isEmpty() {
    return limitRequests == null && limitTokens == null && retryAfter == null
        && (remainingRequests == null || resetRequests == null)
        && (remainingTokens == null || resetTokens == null);
  }

  private static void atLeast(String name, @Nullable Long value, long min) {
    if (value != null && value < min) {
      throw new IllegalArgumentException(name + " must be >= " + min + ", but was " + value);
    }
  }

  private static void notNegative(String name, @Nullable Duration value) {
    if (value != null && value.isNegative()) {
      throw new IllegalArgumentException(name + " must not be negative, but was " + value);
    }
  }
}
