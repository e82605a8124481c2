package io.github.llmratelimiter.core;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What the provider's reports left of one upstream's state in the in-memory store: how long it is
 * closed, the requests and model tokens it admits until their resets, and the lower limits it
 * reported. The upstream's window, model tokens and slots live in its budget's entry; this holds
 * only what a {@link ProviderReport} changes, and the fair order of the calls waiting for the
 * upstream ({@link #queue()}). Every method is called with this object's monitor held, on the
 * store's ticker (nanoseconds).
 */
final class UpstreamState {

  /** The upstream's waiting calls and its tenants' counters, under this object's monitor. */
  private final UpstreamQueue queue = new UpstreamQueue();

  /** The longest a report holds: a year. */
  private static final Duration LONGEST = Duration.ofDays(365);
  private static final long PROBE_NANOS = Upstream.PROBE.toNanos();
  private static final long SILENCE_NANOS = Upstream.SILENCE.toNanos();

  /** The budget with the limits in force: the configured one, or a variant with lower limits. */
  private Budget budget;
  private boolean closed;
  private long closedUntil;
  private boolean requestsHeld;
  private long requestsLeft;
  private long requestsResetAt;
  private boolean tokensHeld;
  private long tokensLeft;
  private long tokensResetAt;
  /** A report closed the upstream or left a count at 0: the next call admitted is a probe. */
  private boolean probeNext;
  /** A probe was admitted and no report came since: no other call until {@link #probeUntil}. */
  private boolean probing;
  private long probeUntil;
  /** The probe was owed to the provider's silence: it holds back only calls that wait. */
  private boolean probeSoft;
  /** Whether a report ever came; the later of the last report and the last probe's start. */
  private boolean heard;
  private long heardAt;

  UpstreamState(Budget configured) {
    this.budget = configured;
  }

  /** The fair order of the calls waiting for the upstream. */
  UpstreamQueue queue() {
    return queue;
  }

  /** The budget whose limits the upstream's window and model tokens are decided against. */
  Budget budget() {
    return budget;
  }

  /** Applies a report made at {@code now}, by the rules on {@link ProviderReport}. */
  void apply(ProviderReport r, long now) {
    probing = false; // an answer came: what it says decides from now on
    heard = true;
    heardAt = now;
    Budget configured = budget.defaults();
    WindowLimit window = budget.window();
    if (r.limitRequests() != null && configured.window() != null) {
      window = new WindowLimit(Math.min(r.limitRequests(), configured.window().limit()),
          configured.window().window());
    }
    ModelTokenLimit tokens = budget.modelTokens();
    if (r.limitTokens() != null && configured.modelTokens() != null) {
      tokens = new ModelTokenLimit(Math.min(r.limitTokens(), configured.modelTokens().limit()),
          configured.modelTokens().window());
    }
    budget = configured.variant(window, null, tokens, configured.concurrency());
    if (r.remainingRequests() != null && r.resetRequests() != null) {
      requestsLeft = r.remainingRequests();
      requestsResetAt = now + nanos(r.resetRequests());
      requestsHeld = requestsResetAt - now > 0;
      probeNext |= requestsHeld && requestsLeft == 0;
    }
    if (r.remainingTokens() != null && r.resetTokens() != null) {
      tokensLeft = r.remainingTokens();
      tokensResetAt = now + nanos(r.resetTokens());
      tokensHeld = tokensResetAt - now > 0;
      probeNext |= tokensHeld && tokensLeft == 0;
    }
    if (r.retryAfter() != null) {
      long until = now + nanos(r.retryAfter());
      if (!closed(now) || until - closedUntil > 0) {
        closedUntil = until;
        closed = until - now > 0;
      }
      probeNext |= until - now > 0;
    }
  }

  /**
   * Milliseconds until the reports admit a call estimated at {@code estimate} model tokens: 0 when
   * they admit it now, else the longest of the waits of a retry, a count of requests left at 0, a
   * count of tokens left below the estimate (or at 0), and a probe in flight (one owed to the
   * provider's silence holds back only a call that {@code waiting} in the upstream's order).
   */
  long waitMs(long now, long estimate, boolean waiting) {
    long wait = reportedWaitMs(now, estimate);
    if (probing && probeUntil - now > 0 && (!probeSoft || waiting)) {
      wait = Math.max(wait, BudgetTable.ceilMs(probeUntil - now));
    }
    return wait;
  }

  /** {@link #waitMs} without the probe: what the reports themselves hold. */
  private long reportedWaitMs(long now, long estimate) {
    long wait = closed(now) ? BudgetTable.ceilMs(closedUntil - now) : 0;
    if (requestsHeld(now) && requestsLeft <= 0) {
      wait = Math.max(wait, BudgetTable.ceilMs(requestsResetAt - now));
    }
    if (tokensHeld(now) && (tokensLeft <= 0 || estimate > tokensLeft)) {
      wait = Math.max(wait, BudgetTable.ceilMs(tokensResetAt - now));
    }
    return wait;
  }

  /**
   * Counts an admitted call down from the counts that hold; the first call admitted after a report
   * closed the upstream or left a count at 0, or after {@link Upstream#SILENCE} without a report
   * or a probe of silence, is a probe, which goes alone until the next report or {@link
   * Upstream#PROBE} (a probe of silence alone only among the calls that wait).
   */
  void admitted(long now, long estimate) {
    if (probeNext) {
      probeNext = false;
      probing = true;
      probeSoft = false;
      probeUntil = now + PROBE_NANOS;
    } else if (heard && now - heardAt >= SILENCE_NANOS) {
      probing = true;
      probeSoft = true;
      probeUntil = now + PROBE_NANOS;
      heardAt = now;
    }
    if (requestsHeld(now)) {
      requestsLeft = Math.max(0, requestsLeft - 1);
    }
    if (tokensHeld(now)) {
      tokensLeft = Math.max(0, tokensLeft - estimate);
    }
  }

  /** The requests left until the reported reset, or null when no count holds. */
  @Nullable Long requestsLeft(long now) {
    return requestsHeld(now) ? requestsLeft : null;
  }

  /** The model tokens left until the reported reset, or null when no count holds. */
  @Nullable Long tokensLeft(long now) {
    return tokensHeld(now) ? tokensLeft : null;
  }

  /** Milliseconds the upstream stays closed by a retry or a count at 0 (0 when open). */
  long closedForMs(long now) {
    return reportedWaitMs(now, 0);
  }

  /** A reported duration in nanoseconds, at most {@link #LONGEST} (no overflow on the ticker). */
  private static long nanos(Duration d) {
    return d.compareTo(LONGEST) > 0 ? LONGEST.toNanos() : d.toNanos();
  }

  private boolean closed(long now) {
    return closed && closedUntil - now > 0;
  }

  private boolean requestsHeld(long now) {
    return requestsHeld && requestsResetAt - now > 0;
  }

  private boolean tokensHeld(long now) {
    return tokensHeld && tokensResetAt - now > 0;
  }
}
