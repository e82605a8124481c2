package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import org.jspecify.annotations.Nullable;

/**
 * A provider account that the gateway's calls share (an OpenAI organisation key, an Azure
 * deployment), with the limits the provider holds it to: requests per window, model tokens per
 * window and calls in flight.
 *
 * <p>Unlike a tenant's {@link Budget}, an upstream has one state for the whole gateway: every call
 * routed to it, whatever its key, counts against the same window, model tokens and slots, on every
 * store (on Redis, across every instance). A store decides the upstream in the same atomic step as
 * the caller's own levels ({@link RateLimitStore#reserve(java.util.List, java.util.List, double,
 * Consumption, Composition, Upstream)}) and corrects its state from what the provider reports
 * ({@link RateLimitStore#report}).
 *
 * <p>The upstream's state belongs to a budget named {@link #BUDGET_PREFIX} followed by its name
 * ({@link #budget()}); a {@link Reservation} that admitted a call to an upstream carries that
 * budget as its last level, with the upstream's name as its key, so that {@link
 * RateLimitStore#reconcile} settles the upstream's model tokens and {@link RateLimitStore#release}
 * gives back its slot like any level's.
 *
 * @param name the upstream's name, not blank, without {@code {}} or {@code }}
 * @param requests the requests per window the provider allows, or {@code null} for none
 * @param modelTokens the model tokens per window the provider allows, or {@code null} for none
 * @param concurrency the calls in flight the provider allows, or {@code null} for none
 */
public record Upstream(
    String name,
    @Nullable WindowLimit requests,
    @Nullable ModelTokenLimit modelTokens,
    @Nullable ConcurrencyLimit concurrency) {

  /**
   * How long a probe goes alone: the first call admitted once a report's retry (a 429) or a
   * count at 0 stops holding the upstream, or once the provider has said nothing for {@link
   * #SILENCE}, is a probe, and no other call is admitted until a report comes back from the
   * provider (the probe's answer, or any other) or this time passes. So when the provider's
   * state changed behind the gateway's back (it lowered its limits, another client used the
   * account), one call finds out, not every call admitted at once.
   */
  public static final java.time.Duration PROBE = java.time.Duration.ofSeconds(1);

  /**
   * How long without a report from the provider (and without a probe of silence) makes its last
   * word stale: the next call admitted is a probe ({@link #PROBE}) that holds back only the calls
   * waiting in the upstream's order (a call whose {@link UpstreamTurn} names its waiting call);
   * the others are decided as always. Only an upstream the provider reported on at least once has
   * a last word.
   */
  public static final java.time.Duration SILENCE = java.time.Duration.ofSeconds(10);

  /** The start of the name of every upstream's budget; no other budget's name starts so. */
  public static final String BUDGET_PREFIX = "upstream:";

  /**
   * Validates the upstream.
   *
   * @throws IllegalArgumentException if the name is blank or holds a brace, or every limit is null
   */
  public Upstream {
    Args.notBlank("name", name);
    if (name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
      throw new IllegalArgumentException("name must not contain '{' or '}', but was '" + name + "'");
    }
    if (requests == null && modelTokens == null && concurrency == null) {
      throw new IllegalArgumentException("upstream '" + name + "' needs a requests, a model-token"
          + " or a concurrency limit, but all were null");
    }
  }

  /**
   * Returns the budget whose state is this upstream's: named {@link #BUDGET_PREFIX} + {@link
   * #name()}, with the upstream's limits.
   *
   * @return the budget
   */
  public Budget budget() {
    return new Budget(BUDGET_PREFIX + name, requests, null, modelTokens, concurrency);
  }

  /**
   * Tells whether a budget is an upstream's.
   *
   * @param budget the budget
   * @return whether its name starts with {@link #BUDGET_PREFIX}
   */
  public static boolean isUpstream(Budget budget) {
    return budget.name().startsWith(BUDGET_PREFIX);
  }
}
