package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A hierarchy of budgets, each with its own key, for example organisation, then API key, then API
 * key and model: a call is admitted only if every level admits it.
 *
 * <p>Every level's entry is locked for the whole decision, in one global order, so concurrent
 * callers on sibling keys never over-admit a shared level and never deadlock. In {@link
 * Composition#RESERVE_COMMIT} no level is charged when any level denies, and the deny names the
 * level and component that bind over all levels (one that never clears, else the longest wait).
 * In {@link Composition#SEQUENTIAL} the levels run root first, each as a {@link GatewayLimiter}
 * would: the levels before the denying one stay fully charged, the denying level keeps its window
 * timestamp if its bucket denied, and the deny names the denying level. Either way {@link
 * Decision#remaining()} is the smallest over every level.
 *
 * <pre>{@code
 * HierarchicalLimiter limiter = HierarchicalLimiter.builder()
 *     .level(Budget.of("org", WindowLimit.perMinute(1000), new BucketLimit(100, 20)))
 *     .level(Budget.of("api-key", WindowLimit.perMinute(100), new BucketLimit(10, 2)))
 *     .build();
 * Decision d = limiter.allow(List.of("acme", "sk-123"));
 * }</pre>
 */
public final class HierarchicalLimiter {

  private final List<Budget> levels;
  private final Composition composition;
  private final RateLimitStore store;

  /** The in-memory store, the levels' tables in it and their lock order; null for other stores. */
  private final @Nullable InMemoryStore memory;

  private final BudgetTable @Nullable [] tables;
  private final int @Nullable [] lockOrder;

  private HierarchicalLimiter(List<Budget> levels, Composition composition, RateLimitStore store) {
    this.levels = levels;
    this.composition = composition;
    this.store = store;
    this.memory = store instanceof InMemoryStore m && levels.size() > 1 ? m : null;
    this.tables = memory != null ? memory.tables(levels) : null;
    this.lockOrder = tables != null ? InMemoryStore.lockOrder(tables) : null;
  }

  /**
   * Returns a builder with sequential composition and an in-memory store.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Admits one call of cost 1.
   *
   * @param keys one key per level, root first
   * @return the decision
   * @throws IllegalArgumentException if a key is blank or the count differs from the levels'
   */
  public Decision allow(List<String> keys) {
    return allow(keys, 1.0);
  }

  /**
   * Admits one call costing {@code tokens} bucket tokens at every level.
   *
   * @param keys one key per level, root first
   * @param tokens the cost, finite and positive
   * @return the decision; {@link Decision#level()} names the denying (or binding) level
   * @throws IllegalArgumentException if a key is blank, the count differs from the levels', or the
   *     cost is not finite and positive
   */
  public Decision allow(List<String> keys, double tokens) {
    InMemoryStore m = memory;
    if (m != null) {
      if (keys == null || keys.size() != levels.size()) {
        return store.acquire(levels, keys, tokens, composition); // throws, naming the problem
      }
      return m.acquire(tables, lockOrder, keys, tokens, composition);
    }
    return store.acquire(levels, keys, tokens, composition);
  }

  /**
   * Admits one call of cost 1 as {@link #allow(List)} does, telling only whether it was allowed.
   *
   * @param keys one key per level, root first
   * @return whether the call was allowed
   * @throws IllegalArgumentException if a key is blank or the count differs from the levels'
   */
  public boolean tryAcquire(List<String> keys) {
    return tryAcquire(keys, 1.0);
  }

  /**
   * Admits one call costing {@code tokens} bucket tokens at every level, with the same charges as
   * {@link #allow(List, double)}, telling only whether it was allowed: on the in-memory store it
   * allocates nothing.
   *
   * @param keys one key per level, root first
   * @param tokens the cost, finite and positive
   * @return whether the call was allowed
   * @throws IllegalArgumentException if a key is blank, the count differs from the levels', or the
   *     cost is not finite and positive
   */
  public boolean tryAcquire(List<String> keys, double tokens) {
    InMemoryStore m = memory;
    if (m != null && keys != null && keys.size() == levels.size()) {
      return m.tryAcquire(tables, lockOrder, keys, tokens, composition);
    }
    return allow(keys, tokens).allowed();
  }

  /**
   * Admits one call and reserves its estimated model tokens at every level that limits them, and a
   * slot at every level that limits concurrency.
   *
   * @param keys one key per level, root first
   * @param tokens the cost in bucket tokens, finite and positive
   * @param estimatedModelTokens the model tokens the call is expected to use, at least 0
   * @return the decision with what was reserved; pass it to {@link #reconcile} when the call ends
   * @throws IllegalArgumentException on a blank key, a count that differs from the levels', a bad
   *     cost or a negative estimate
   */
  public Reservation reserve(List<String> keys, double tokens, long estimatedModelTokens) {
    return store.reserve(levels, keys, tokens, estimatedModelTokens, composition);
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
   * Gives back the slots a reservation holds at the levels that limit concurrency: the call has
   * ended. A second release does nothing.
   *
   * @param reservation what {@link #reserve} returned
   * @throws IllegalArgumentException if the reservation is null
   */
  public void release(Reservation reservation) {
    store.release(reservation);
  }

  /**
   * Returns the levels, root first.
   *
   * @return the budgets
   */
  public List<Budget> levels() {
    return levels;
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
   * Returns the store that holds the levels' state.
   *
   * @return the store
   */
  public RateLimitStore store() {
    return store;
  }

  /** Builds a {@link HierarchicalLimiter} from at least one level. */
  public static final class Builder {

    private final List<Budget> levels = new ArrayList<>();
    private final Set<String> names = new HashSet<>();
    private Composition composition = Composition.SEQUENTIAL;
    private @Nullable RateLimitStore store;
    private @Nullable Ticker ticker;

    private Builder() {}

    /**
     * Appends a level below the ones added before.
     *
     * @param budget the level's budget; its name must differ from the other levels'
     * @return this builder
     * @throws IllegalArgumentException on a null budget or a repeated name
     */
    public Builder level(Budget budget) {
      Args.notNull("budget", budget);
      if (!names.add(budget.name())) {
        throw new IllegalArgumentException(
            "level names must be distinct, but '" + budget.name() + "' was added twice");
      }
      levels.add(budget);
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
     * @throws IllegalArgumentException if no level was added
     */
    public HierarchicalLimiter build() {
      if (levels.isEmpty()) {
        throw new IllegalArgumentException("levels must not be empty: add at least one level");
      }
      RateLimitStore s = store != null
          ? store
          : RateLimitStore.inMemory(ticker != null ? ticker : Ticker.system());
      return new HierarchicalLimiter(List.copyOf(levels), composition, s);
    }
  }
}
