package io.github.llmratelimiter.core;

/** Why a {@link Decision} allowed or denied a call. */
public enum Reason {

  /** Every budget admitted the call and it was charged. */
  OK,

  /**
   * The sliding-window log was full: nothing was appended to the window. In sequential composition
   * no later component ran; in reserve-then-commit composition every component was checked and the
   * window's wait was the longest. This deny is free.
   */
  RPM_LIMIT,

  /**
   * The token bucket held fewer tokens than the call costs (less a tolerance of 10<sup>-9</sup> of
   * the cost). In sequential composition the RPM timestamp appended before the bucket ran stays
   * counted; in reserve-then-commit composition nothing was charged, and the bucket's wait was the
   * longest, or the bucket never refills.
   */
  BURST_LIMIT,

  /**
   * The model-token window (TPM) held too many tokens to add this call's estimate. In sequential
   * composition the window's timestamp and the bucket's debit made before stay charged; in
   * reserve-then-commit composition nothing was charged, and the model tokens' wait was the
   * longest.
   */
  TPM_LIMIT,

  /**
   * The key already holds as many calls in flight as its {@link ConcurrencyLimit} admits. A level
   * checks it before its window, so this deny charges nothing at its level (in sequential
   * composition the levels before it stay charged, as for {@link #RPM_LIMIT}). It is retryable,
   * and its wait is an upper bound: the time until the earliest lease held expires, after which a
   * slot is free even if no call in flight ends (a slot usually frees sooner, when a call ends and
   * is released).
   */
  CONCURRENCY_LIMIT,

  /**
   * A {@link QuotaLimit} had too little left this period for the call's estimate (1 request, its
   * model tokens or its cost): nothing is charged at the quota; in sequential composition what ran
   * before it stays charged, as for {@link #TPM_LIMIT}. It is retryable; its wait is the time until
   * the period ends, exactly, unless what does not fit is only the estimates of calls in flight
   * (the key's settled use leaves room for this call): then 1 s, since they are settled when
   * their calls end, usually below their estimates.
   */
  QUOTA_EXCEEDED,

  /**
   * The call costs more tokens than the bucket can ever hold, or estimates more model tokens than
   * the model-token window admits: waiting never helps, and nothing was charged. The call is
   * refused from its cost and its levels' limits alone, before any state is read (on Redis, with
   * no round trip), so the deny reports {@code remaining} 0 and {@code resetAfterMs} 0 (and {@code
   * retryAfterMs} 0, not retryable), whatever the levels hold, the same on every store; the level
   * it names is the first, root first, that can never admit the call.
   */
  COST_EXCEEDS_CAPACITY,

  /**
   * The store already tracks its maximum number of keys and this key is new to it: nothing was
   * charged, and the call may succeed once idle keys have been dropped.
   */
  TRACKED_KEYS_LIMIT,

  /**
   * The store could not decide (a distributed store that does not answer) and its failure policy is
   * to deny: nothing was charged, and the call may succeed once the store answers again.
   */
  STORE_UNAVAILABLE,

  /**
   * Every level of the caller admitted the call, but its {@link Upstream} did not: the upstream's
   * window, model tokens or slots are all used, or the provider's last {@linkplain ProviderReport
   * report} leaves nothing or closed it. Nothing was charged at any level, whatever the composition,
   * so a caller may wait and try again without spending its own budgets. It is retryable, with the
   * time until the upstream's state that denies the call lapses as its wait (for slots, until the
   * earliest lease expires: an upper bound).
   */
  UPSTREAM_LIMIT
}
