package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A named budget: a sliding-window request limit, a token bucket, a model-token limit, a limit on
 * calls in flight, or any mix, applied to each key separately.
 *
 * <p>The name identifies the budget's state in a {@link RateLimitStore}: two limiters that use the
 * same name on the same store share it. A store checks that a name always comes with the same
 * <em>defaults</em> (a budget built with {@code new Budget(...)} is its own defaults), and throws
 * an {@link IllegalArgumentException} otherwise, since two different budgets that share a name by
 * accident would share their keys' state.
 *
 * <h2>Variants: other limits over the same state</h2>
 *
 * <p>A {@linkplain #variant variant} keeps its defaults' name and state and carries other limits
 * (a tenant's plan): a call made with a variant is decided on the state that every call of the
 * name shares, against the variant's limits, and a key can move from one variant to another at
 * any call without anything it spent being reset. A variant limits the same components as its
 * defaults, over the same window lengths; it may change the numbers: the window's limit, the
 * bucket's capacity and refill, the model-token limit, the concurrency limit and lease timeout.
 * A call applies its own limits to the state as it stands, by these rules, the same on every
 * store:
 * <ul>
 *   <li><b>Window</b>: the admissions in the window count against the call's limit, whoever made
 *       them: a key with 60 calls in the last minute that moves from 600 to 60 a minute is denied
 *       ({@link Reason#RPM_LIMIT}) until the oldest of them leave the window.
 *   <li><b>Bucket</b>: the bucket keeps its level and the time it was last refilled; a call
 *       refills it since then at the call's rate, up to the call's capacity, and a level above
 *       that capacity is cut down to it. So a level is clamped to a smaller capacity, and from the
 *       call on it refills at the new rate; the time since the key's last refill counts at the
 *       new rate too (the store cannot know when within it the limits changed).
 *   <li><b>Model tokens</b>: the entries in the model-token window count against the call's limit,
 *       whoever reserved them.
 *   <li><b>Concurrency</b>: the slots held count against the call's limit, whoever took them; a
 *       lease keeps the expiry it was taken with.
 * </ul>
 * A state that a call leaves fresh under its limits (no admission in the window and the bucket at
 * its capacity) is forgotten, and so is one that becomes fresh under the limits of its last call
 * once the store's housekeeping finds it (the in-memory maintenance, Redis's expiry): the next
 * call finds a forgotten key fresh under its own limits (a full bucket at its capacity). Nothing
 * spent is forgotten: a fresh bucket has nothing spent.
 *
 * @param name the budget's name (also the level named in decisions), not blank, without {@code {}}
 *     or {@code }}
 * @param window the requests-per-window limit, or {@code null} for none
 * @param bucket the burst bucket, or {@code null} for none
 * @param modelTokens the model tokens per window (TPM), or {@code null} for none
 * @param concurrency the most calls in flight at once, or {@code null} for none
 * @param quotas the budgets over calendar periods (requests, model tokens or cost per hour, day,
 *     week or month), distinct names; a variant may carry other quotas than its defaults (see
 *     {@link QuotaLimit} for how their state is shared)
 * @param variantOf the defaults this budget is a variant of, or {@code null} when it is its own
 *     defaults
 */
public record Budget(
    String name,
    @Nullable WindowLimit window,
    @Nullable BucketLimit bucket,
    @Nullable ModelTokenLimit modelTokens,
    @Nullable ConcurrencyLimit concurrency,
    List<QuotaLimit> quotas,
    @Nullable Budget variantOf) {

  /**
   * Validates the budget.
   *
   * @throws IllegalArgumentException if the name is blank or holds a brace, every limit is null
   *     and there is no quota, two quotas share a name, or a variant's name, components or window
   *     lengths differ from its defaults'
   */
  public Budget {
    Args.notBlank("name", name);
    if (name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
      throw new IllegalArgumentException("name must not contain '{' or '}', but was '" + name + "'");
    }
    quotas = List.copyOf(Args.notNull("quotas", quotas));
    Set<String> quotaNames = new HashSet<>();
    for (QuotaLimit q : quotas) {
      if (!quotaNames.add(q.name())) {
        throw new IllegalArgumentException("budget '" + name + "' has two quotas named '"
            + q.name() + "': " + quotas);
      }
    }
    if (window == null && bucket == null && modelTokens == null && concurrency == null
        && quotas.isEmpty()) {
      throw new IllegalArgumentException("budget '" + name + "' needs a window, a bucket, a"
          + " model-token or a concurrency limit, or a quota, but all were null");
    }
    if (variantOf != null) {
      variantOf = variantOf.defaults();
      if (!variantOf.name.equals(name)) {
        throw new IllegalArgumentException("a variant keeps its defaults' name '" + variantOf.name
            + "', but was '" + name + "'");
      }
      sameShape("window", window, variantOf.window,
          window == null ? null : window.window(), variantOf.window == null ? null : variantOf.window.window());
      sameShape("bucket", bucket, variantOf.bucket, null, null);
      sameShape("modelTokens", modelTokens, variantOf.modelTokens,
          modelTokens == null ? null : modelTokens.window(),
          variantOf.modelTokens == null ? null : variantOf.modelTokens.window());
      sameShape("concurrency", concurrency, variantOf.concurrency, null, null);
    }
  }

  /**
   * Returns a budget that is a variant of {@code variantOf}, or its own defaults, without quotas.
   *
   * @param name the budget's name
   * @param window the requests-per-window limit, or {@code null} for none
   * @param bucket the burst bucket, or {@code null} for none
   * @param modelTokens the model tokens per window, or {@code null} for none
   * @param concurrency the most calls in flight at once, or {@code null} for none
   * @param variantOf the defaults, or {@code null}
   * @throws IllegalArgumentException as the canonical constructor
   */
  public Budget(String name, @Nullable WindowLimit window, @Nullable BucketLimit bucket,
      @Nullable ModelTokenLimit modelTokens, @Nullable ConcurrencyLimit concurrency,
      @Nullable Budget variantOf) {
    this(name, window, bucket, modelTokens, concurrency, List.of(), variantOf);
  }

  /** Checks that a variant's component is present exactly when its defaults' is, over one length. */
  private static void sameShape(String component, @Nullable Object mine, @Nullable Object theirs,
      @Nullable Duration myLength, @Nullable Duration theirLength) {
    if ((mine == null) != (theirs == null)) {
      throw new IllegalArgumentException("a variant limits the same components as its defaults: "
          + component + " must be " + (theirs == null ? "null" : "set") + ", but was " + mine);
    }
    if (!Objects.equals(myLength, theirLength)) {
      throw new IllegalArgumentException("a variant counts " + component
          + " over its defaults' window " + theirLength + ", but was " + myLength);
    }
  }

  /**
   * Returns a budget that is its own defaults.
   *
   * @param name the budget's name
   * @param window the requests-per-window limit, or {@code null} for none
   * @param bucket the burst bucket, or {@code null} for none
   * @param modelTokens the model tokens per window, or {@code null} for none
   * @param concurrency the most calls in flight at once, or {@code null} for none
   * @throws IllegalArgumentException if the name is blank or holds a brace, or every limit is null
   */
  public Budget(String name, @Nullable WindowLimit window, @Nullable BucketLimit bucket,
      @Nullable ModelTokenLimit modelTokens, @Nullable ConcurrencyLimit concurrency) {
    this(name, window, bucket, modelTokens, concurrency, List.of(), null);
  }

  /**
   * Returns a budget without a concurrency limit.
   *
   * @param name the budget's name
   * @param window the requests-per-window limit, or {@code null} for none
   * @param bucket the burst bucket, or {@code null} for none
   * @param modelTokens the model tokens per window, or {@code null} for none
   * @throws IllegalArgumentException if the name is blank or holds a brace, or every limit is null
   */
  public Budget(String name, @Nullable WindowLimit window, @Nullable BucketLimit bucket,
      @Nullable ModelTokenLimit modelTokens) {
    this(name, window, bucket, modelTokens, null, List.of(), null);
  }

  /**
   * Returns a budget without a model-token or concurrency limit.
   *
   * @param name the budget's name
   * @param window the requests-per-window limit, or {@code null} for none
   * @param bucket the burst bucket, or {@code null} for none
   * @throws IllegalArgumentException if the name is blank or holds a brace, or both limits are
   *     null
   */
  public Budget(String name, @Nullable WindowLimit window, @Nullable BucketLimit bucket) {
    this(name, window, bucket, null, null, List.of(), null);
  }

  /**
   * Returns a budget with both a window and a bucket.
   *
   * @param name the budget's name
   * @param window the requests-per-window limit
   * @param bucket the burst bucket
   * @return the budget
   */
  public static Budget of(String name, WindowLimit window, BucketLimit bucket) {
    return new Budget(name, Args.notNull("window", window), Args.notNull("bucket", bucket));
  }

  /**
   * Returns the budget whose name and state this one shares: itself, unless it is a variant.
   *
   * @return {@link #variantOf()} when set, else this budget
   */
  public Budget defaults() {
    return variantOf == null ? this : variantOf;
  }

  /**
   * Checks that this budget decides on the same state as {@code known}, a budget of the same name
   * that a store already holds: both have the same defaults (either may be a variant of them).
   *
   * @param known the budget of this name the store holds
   * @return this budget
   * @throws IllegalArgumentException naming both when their defaults differ: two different budgets
   *     that share a name by accident, which would share their keys' state
   */
  public Budget requireSameDefaults(Budget known) {
    Budget mine = defaults();
    Budget theirs = Args.notNull("known", known).defaults();
    if (mine != theirs && !mine.equals(theirs)) {
      throw new IllegalArgumentException("budget '" + name + "' is already used with other"
          + " defaults: " + theirs + ", but was " + this + " (budgets that share a name share"
          + " their state; a plan's limits are a variant of one budget: Budget.variant)");
    }
    return this;
  }

  /**
   * Returns whether this budget is a variant of other defaults.
   *
   * @return {@code variantOf() != null}
   */
  public boolean isVariant() {
    return variantOf != null;
  }

  /**
   * Returns a variant of this budget's defaults with other limits: the same name and state (see
   * the rules above), the same components over the same window lengths. A variant with exactly
   * the defaults' limits is the defaults themselves.
   *
   * @param window the requests-per-window limit, present exactly when the defaults have one
   * @param bucket the burst bucket, present exactly when the defaults have one
   * @param modelTokens the model tokens per window, present exactly when the defaults limit them
   * @param concurrency the calls in flight, present exactly when the defaults limit them
   * @return the variant
   * @throws IllegalArgumentException if a component is present where the defaults have none, or
   *     absent where they have one, or a window's length differs from the defaults'
   */
  public Budget variant(@Nullable WindowLimit window, @Nullable BucketLimit bucket,
      @Nullable ModelTokenLimit modelTokens, @Nullable ConcurrencyLimit concurrency) {
    return variant(window, bucket, modelTokens, concurrency, quotas);
  }

  /**
   * Returns a variant of this budget's defaults with other limits and quotas, like {@link
   * #variant(WindowLimit, BucketLimit, ModelTokenLimit, ConcurrencyLimit)}; the quotas may be any.
   *
   * @param window the requests-per-window limit, present exactly when the defaults have one
   * @param bucket the burst bucket, present exactly when the defaults have one
   * @param modelTokens the model tokens per window, present exactly when the defaults limit them
   * @param concurrency the calls in flight, present exactly when the defaults limit them
   * @param quotas the quotas of the variant
   * @return the variant
   * @throws IllegalArgumentException as the other {@code variant}
   */
  public Budget variant(@Nullable WindowLimit window, @Nullable BucketLimit bucket,
      @Nullable ModelTokenLimit modelTokens, @Nullable ConcurrencyLimit concurrency,
      List<QuotaLimit> quotas) {
    Budget d = defaults();
    if (Objects.equals(window, d.window) && Objects.equals(bucket, d.bucket)
        && Objects.equals(modelTokens, d.modelTokens) && Objects.equals(concurrency, d.concurrency)
        && d.quotas.equals(quotas)) {
      return d;
    }
    return new Budget(name, window, bucket, modelTokens, concurrency, quotas, d);
  }

  /**
   * Returns this budget with other quotas: a variant of its defaults with its own limits (the
   * defaults themselves when the quotas are theirs).
   *
   * @param quotas the quotas
   * @return the budget
   */
  public Budget withQuotas(List<QuotaLimit> quotas) {
    return variant(window, bucket, modelTokens, concurrency, quotas);
  }

  /**
   * Returns whether a call's estimate can ever fit every enforced quota of this budget.
   *
   * @param estimate the call's estimate
   * @return {@code false} if an enforced quota's limit is below its amount
   */
  public boolean fitsQuotas(Consumption estimate) {
    for (QuotaLimit q : quotas) {
      if (q.enforce() && q.unit().amount(estimate) > q.limit()) {
        return false;
      }
    }
    return true;
  }

  /**
   * Returns whether a call of {@code cost} tokens can ever fit this budget's bucket.
   *
   * @param cost the call's cost in bucket tokens
   * @return {@code false} if the bucket's capacity is below the cost
   */
  public boolean fits(double cost) {
    return bucket == null || cost <= bucket.capacity();
  }

  /**
   * Returns whether a call estimated at {@code modelTokens} can ever fit the model-token limit.
   *
   * @param modelTokens the call's estimated model tokens
   * @return {@code false} if the limit is below the estimate
   */
  public boolean fitsModelTokens(long modelTokens) {
    return this.modelTokens == null || modelTokens <= this.modelTokens.limit();
  }

  /**
   * Returns a copy of this budget with a model-token limit.
   *
   * @param limit the model tokens per window
   * @return the new budget
   * @throws IllegalArgumentException if this budget is a variant whose defaults limit no model
   *     tokens
   */
  public Budget withModelTokens(ModelTokenLimit limit) {
    return new Budget(name, window, bucket, Args.notNull("limit", limit), concurrency, quotas,
        variantOf);
  }

  /**
   * Returns a copy of this budget with a limit on calls in flight.
   *
   * @param limit the concurrency limit
   * @return the new budget
   * @throws IllegalArgumentException if this budget is a variant whose defaults limit no
   *     concurrency
   */
  public Budget withConcurrency(ConcurrencyLimit limit) {
    return new Budget(name, window, bucket, modelTokens, Args.notNull("limit", limit), quotas,
        variantOf);
  }
}
