package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The composed limiter: a sliding-window log (requests per window) and a token bucket
 * (bursts) applied to each key under one lock.
 *
 * <p>In {@link Composition#SEQUENTIAL} (the default) the window runs first: a full window returns
 * {@link Reason#RPM_LIMIT} and never touches the bucket; then the bucket: a short bucket returns
 * {@link Reason#BURST_LIMIT} <em>and the window's timestamp stays counted</em> (it is not rolled
 * back); {@code retryAfterMs} is copied from the denying component (never summed). In {@link
 * Composition#RESERVE_COMMIT} both are checked first and both are charged only if both admit, so a
 * burst deny leaves the window alone, and a deny reports the component that binds: one that never
 * clears, else the longer wait. Either way a decision reports the smaller remaining of the two.
 * Callers of the same key never interleave between the two checks; calls on different keys run in
 * parallel.
 *
 * <pre>{@code
 * GatewayLimiter limiter = GatewayLimiter.builder()
 *     .requestsPerWindow(60, Duration.ofMinutes(1))
 *     .burst(10, 1.0)
 *     .build();
 * Decision d = limiter.allow("tenant-a");
 * }</pre>
 */
public final class GatewayLimiter {

  private final Budget budget;
  private final Composition composition;
  private final RateLimitStore store;
  /** The in-memory store and this budget's table in it, resolved once; null for other stores. */
  private final @Nullable InMemoryStore memory;
  private final @Nullable BudgetTable table;

  private GatewayLimiter(Budget budget, Composition composition, RateLimitStore store) {
    this.budget = budget;
    this.composition = composition;
    this.store = store;
    this.memory = store instanceof InMemoryStore m ? m : null;
    this.table = memory != null ? memory.table(budget) : null;
  }

  /**
   * Returns a builder with a one-minute window, sequential composition and an in-memory store.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Admits one call of cost 1 for {@code key}.
   *
   * @param key the key (a tenant, or a {@link CompositeKey#value()}), not blank
   * @return the decision
   * @throws IllegalArgumentException if the key is null or blank
   *     (or the budget limits concurrency: call {@link #reserve})
   */
  public Decision allow(String key) {
    return allow(key, 1.0);
  }

  /**
   * Admits one call costing {@code tokens} bucket tokens for {@code key}.
   *
   * @param key the key, not blank
   * @param tokens the cost in bucket tokens, finite and positive (fractions allowed)
   * @return the decision
   * @throws IllegalArgumentException if the key is blank or the cost is not finite and positive
   *     (or the budget limits concurrency: call {@link #reserve})
   */
  public Decision allow(String key, double tokens) {
    InMemoryStore m = memory;
    if (m != null) {
      return m.acquire(table, key, tokens, composition);
    }
    return store.acquire(budget, key, tokens, composition);
  }

  /**
   * Admits and charges one call exactly like {@link #allow(String, double)}, telling only whether
   * it was admitted: on the in-memory store it allocates nothing.
   *
   * @param key the key, not blank
   * @param tokens the cost in bucket tokens, finite and positive (fractions allowed)
   * @return whether the call was admitted
   * @throws IllegalArgumentException if the key is blank or the cost is not finite and positive
   *     (or the budget limits concurrency: call {@link #reserve})
   */
  public boolean tryAcquire(String key, double tokens) {
    InMemoryStore m = memory;
    if (m != null) {
      return m.tryAcquire(table, key, tokens, composition);
    }
    return store.acquire(budget, key, tokens, composition).allowed();
  }

  /**
   * Admits one call and reserves its estimated model tokens, for a budget with a model-token limit,
   * and its slot, for a budget with a concurrency limit.
   *
   * @param key the key, not blank
   * @param tokens the cost in bucket tokens, finite and positive
   * @param estimatedModelTokens the model tokens the call is expected to use, at least 0
   * @return the decision with what was reserved; pass it to {@link #reconcile} and {@link
   *     #release} when the call ends
   * @throws IllegalArgumentException on a blank key, a bad cost or a negative estimate
   */
  public Reservation reserve(String key, double tokens, long estimatedModelTokens) {
    return store.reserve(List.of(budget), List.of(key), tokens, estimatedModelTokens, composition);
  }

  /**
   * Replaces a reservation's estimate with the model tokens the call used (0 for a failed call).
   *
   * @param reservation what {@link #reserve} returned
   * @param actualModelTokens the model tokens used, at least 0
   * @throws IllegalArgumentException if the usage is negative
   */
  public void reconcile(Reservation reservation, long actualModelTokens) {
    store.reconcile(reservation, actualModelTokens);
  }

  /**
   * Gives back the slot a reservation holds: the call has ended. A second release does nothing.
   *
   * @param reservation what {@link #reserve} returned
   * @throws IllegalArgumentException if the reservation is null
   */
  public void release(Reservation reservation) {
    store.release(reservation);
  }

  /**
   * Returns the budget this limiter applies.
   *
   * @return the budget
   */
  public Budget budget() {
    return budget;
  }

  /**
   * Returns the composition mode.
   *
   * @return the composition
   */
  public Composition composition() {
    return composition;
  }

  /**
   * Returns the store that holds this limiter's state.
   *
   * @return the store
   */
  public RateLimitStore store() {
    return store;
  }

  /** Builds a {@link GatewayLimiter} from at least one limit. */
  public static final class Builder {

    private String name = "default";
    private @Nullable WindowLimit window;
    private @Nullable BucketLimit bucket;
    private @Nullable ModelTokenLimit modelTokens;
    private @Nullable ConcurrencyLimit concurrency;
    private Composition composition = Composition.SEQUENTIAL;
    private @Nullable RateLimitStore store;
    private @Nullable Ticker ticker;

    private Builder() {}

    /**
     * Sets the budget's name (the level named in decisions and the state's name in the store).
     *
     * @param name the name, not blank
     * @return this builder
     */
    public Builder name(String name) {
      this.name = Args.notBlank("name", name);
      return this;
    }

    /**
     * Sets the sliding-window limit.
     *
     * @param limit calls admitted per window, at least 1
     * @param window the window's length, positive
     * @return this builder
     * @throws IllegalArgumentException on a bad limit or window
     */
    public Builder requestsPerWindow(long limit, Duration window) {
      this.window = new WindowLimit(limit, window);
      return this;
    }

    /**
     * Sets a limit of {@code limit} calls per minute.
     *
     * @param limit calls admitted per minute, at least 1
     * @return this builder
     * @throws IllegalArgumentException on a bad limit
     */
    public Builder requestsPerMinute(long limit) {
      this.window = WindowLimit.perMinute(limit);
      return this;
    }

    /**
     * Sets the burst bucket.
     *
     * @param capacity the most tokens held, finite and positive
     * @param refillPerSecond tokens regained per second, finite and not negative
     * @return this builder
     * @throws IllegalArgumentException on a bad capacity or refill
     */
    public Builder burst(double capacity, double refillPerSecond) {
      this.bucket = new BucketLimit(capacity, refillPerSecond);
      return this;
    }

    /**
     * Sets a limit on the model tokens per window (TPM), checked by {@link #reserve}.
     *
     * @param limit model tokens admitted per window, at least 1
     * @param window the window's length, positive
     * @return this builder
     * @throws IllegalArgumentException on a bad limit or window
     */
    public Builder modelTokensPerWindow(long limit, Duration window) {
      this.modelTokens = new ModelTokenLimit(limit, window);
      return this;
    }

    /**
     * Sets a limit on the calls in flight at once, with the default lease of ten minutes; the
     * limiter's calls then go through {@link #reserve} and {@link #release}.
     *
     * @param limit the most calls in flight at once, at least 1
     * @return this builder
     * @throws IllegalArgumentException on a bad limit
     */
    public Builder concurrency(long limit) {
      this.concurrency = ConcurrencyLimit.of(limit);
      return this;
    }

    /**
     * Sets a limit on the calls in flight at once and how long a slot is held at most.
     *
     * @param limit the most calls in flight at once, at least 1
     * @param leaseTimeout how long a slot is held at most, positive, at most one day
     * @return this builder
     * @throws IllegalArgumentException on a bad limit or lease
     */
    public Builder concurrency(long limit, Duration leaseTimeout) {
      this.concurrency = new ConcurrencyLimit(limit, leaseTimeout);
      return this;
    }

    /**
     * Sets the composition mode.
     *
     * @param composition the mode
     * @return this builder
     */
    public Builder composition(Composition composition) {
      this.composition = Args.notNull("composition", composition);
      return this;
    }

    /**
     * Sets the store; by default a new in-memory store on the ticker.
     *
     * @param store the store
     * @return this builder
     */
    public Builder store(RateLimitStore store) {
      this.store = Args.notNull("store", store);
      return this;
    }

    /**
     * Sets the ticker of the default in-memory store (ignored when a store is set).
     *
     * @param ticker the time source
     * @return this builder
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Args.notNull("ticker", ticker);
      return this;
    }

    /**
     * Builds the limiter.
     *
     * @return the limiter
     * @throws IllegalArgumentException if no limit was set
     */
    public GatewayLimiter build() {
      Budget budget = new Budget(name, window, bucket, modelTokens, concurrency);
      RateLimitStore s = store != null
          ? store
          : RateLimitStore.inMemory(ticker != null ? ticker : Ticker.system());
      return new GatewayLimiter(budget, composition, s);
    }
  }
}
