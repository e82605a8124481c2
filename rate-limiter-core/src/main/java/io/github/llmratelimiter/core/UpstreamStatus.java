package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import org.jspecify.annotations.Nullable;

/**
 * Where an upstream stands on a store: what its window, model tokens and slots hold, and what the
 * provider last reported that still holds.
 *
 * @param upstream the upstream's name
 * @param requestsLimit the requests per window in force (the configured limit, or the provider's
 *     lower one), or {@code null} if the upstream limits no requests
 * @param requestsRemaining the requests the window admits now, or {@code null} if unlimited
 * @param modelTokensLimit the model tokens per window in force, or {@code null} if unlimited
 * @param modelTokensRemaining the model tokens the window admits now, or {@code null} if unlimited
 * @param inFlight the calls holding a slot now (0 when the upstream limits no concurrency)
 * @param reportedRequestsRemaining the requests the provider's last report left, as counted down
 *     by the calls admitted since, or {@code null} if no report holds
 * @param reportedTokensRemaining the model tokens the provider's last report left, as counted down
 *     since, or {@code null} if no report holds
 * @param closedForMs how long the upstream stays closed by a provider's retry or a remaining count
 *     of 0, in milliseconds; 0 when open
 */
public record UpstreamStatus(
    String upstream,
    @Nullable Long requestsLimit,
    @Nullable Long requestsRemaining,
    @Nullable Long modelTokensLimit,
    @Nullable Long modelTokensRemaining,
    long inFlight,
    @Nullable Long reportedRequestsRemaining,
    @Nullable Long reportedTokensRemaining,
    long closedForMs) {

  /**
   * Validates the status.
   *
   * @throws IllegalArgumentException if the name is blank or a count is negative
   */
  public UpstreamStatus {
    Args.notBlank("upstream", upstream);
    Args.notNegative("inFlight", inFlight);
    Args.notNegative("closedForMs", closedForMs);
  }
}
