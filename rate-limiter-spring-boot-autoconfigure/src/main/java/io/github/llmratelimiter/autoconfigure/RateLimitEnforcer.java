package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.autoconfigure.RateLimiterProperties.StoreFailure;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import java.util.List;
import java.util.function.LongSupplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The one place the Spring layer asks the store for a decision: it turns a policy and a caller into
 * the levels and keys of one {@link RateLimitStore#acquire(List, List, double,
 * io.github.llmratelimiter.core.Composition) store call}, so every level of a hierarchy is decided
 * atomically, and tells the {@link RateLimitObserver}s.
 *
 * <p>When a level limits model tokens (TPM), the call's estimated model tokens are reserved in the
 * same store call ({@link RateLimitStore#reserve}) and the outcome carries a {@link
 * ModelTokenReservation} that settles them with the call's usage.
 *
 * <p>It depends only on the {@link RateLimitStore} interface: the in-memory store and distributed
 * stores are interchangeable.
 */
public final class RateLimitEnforcer {

  private static final Log LOG = LogFactory.getLog(RateLimitEnforcer.class);

  private final RateLimitStore store;
  private final RateLimitPolicies policies;
  private final StoreFailure storeFailure;
  private final ObjectProvider<RateLimitObserver> observerProvider;
  private volatile @Nullable List<RateLimitObserver> observers;

  /**
   * Creates the enforcer.
   *
   * @param store the store that decides
   * @param policies the policies
   * @param storeFailure what to do when the store fails
   * @param observers the observers, resolved on first use
   */
  public RateLimitEnforcer(RateLimitStore store, RateLimitPolicies policies, StoreFailure storeFailure,
      ObjectProvider<RateLimitObserver> observers) {
    this.store = store;
    this.policies = policies;
    this.storeFailure = storeFailure;
    this.observerProvider = observers;
  }

  /**
   * Decides one call and charges it as the policy's composition says.
   *
   * @param policyName the policy, or null or blank for the default policy
   * @param key the caller
   * @param cost the call's cost in bucket tokens (the window counts the call once)
   * @return the outcome, allowed or denied
   * @throws InvalidRateLimitRequestException if the policy is unknown or the cost is not a finite
   *     positive number
   * @throws RateLimitStoreUnavailableException if the store fails and failures deny
   */
  public RateLimitOutcome acquire(@Nullable String policyName, RateLimitKey key, double cost) {
    return acquire(policyName, key, cost, () -> 0);
  }

  /**
   * Decides one call and charges it as the policy's composition says, reserving its estimated model
   * tokens on every level that limits them, in the same atomic store call.
   *
   * @param policyName the policy, or null or blank for the default policy
   * @param key the caller
   * @param cost the call's cost in bucket tokens (the window counts the call once)
   * @param estimate the call's estimated model tokens; asked only when a level limits them
   * @return the outcome, allowed or denied; when it reserved model tokens, with the handle that
   *     settles them
   * @throws InvalidRateLimitRequestException if the policy is unknown, the cost is not a finite
   *     positive number or the estimate is negative
   * @throws RateLimitStoreUnavailableException if the store fails and failures deny
   */
  public RateLimitOutcome acquire(
      @Nullable String policyName, RateLimitKey key, double cost, LongSupplier estimate) {
    RateLimitPolicy policy;
    try {
      policy = policies.policy(policyName);
    } catch (IllegalArgumentException e) {
      throw new InvalidRateLimitRequestException(e.getMessage(), e);
    }
    if (!(cost > 0) || Double.isInfinite(cost)) {
      throw new InvalidRateLimitRequestException(
          "cost must be a finite number > 0, but was " + cost, null);
    }
    List<Budget> levels = policy.budgets(key);
    List<String> keys = policy.keys(key);
    long start = System.nanoTime();
    RateLimitOutcome outcome;
    boolean limitsModelTokens = false;
    for (int i = 0; i < levels.size() && !limitsModelTokens; i++) {
      limitsModelTokens = levels.get(i).modelTokens() != null;
    }
    long estimated = limitsModelTokens ? estimate.getAsLong() : 0;
    if (estimated < 0) {
      throw new InvalidRateLimitRequestException(
          "the model-token estimate must be >= 0, but was " + estimated, null);
    }
    try {
      if (limitsModelTokens) {
        Reservation r = store.reserve(levels, keys, cost, estimated, policies.composition());
        ModelTokenReservation handle =
            r.reserved() ? new ModelTokenReservation(this, policy.name(), r) : null;
        outcome = new RateLimitOutcome(policy, key, r.decision(), levels, false, r, handle);
      } else {
        Decision decision = store.acquire(levels, keys, cost, policies.composition());
        outcome = new RateLimitOutcome(policy, key, decision, levels, false);
      }
    } catch (IllegalArgumentException e) {
      throw new InvalidRateLimitRequestException(
          "the call cannot be limited: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      if (storeFailure == StoreFailure.DENY) {
        throw new RateLimitStoreUnavailableException(policy.name(), e);
      }
      Budget last = levels.get(levels.size() - 1);
      outcome = new RateLimitOutcome(policy, key, Decision.allow(0, 0, last.name()), levels, true);
    }
    long nanos = System.nanoTime() - start;
    for (RateLimitObserver o : observers()) {
      o.onDecision(outcome, nanos);
    }
    return outcome;
  }

  /** Reconciles a reservation in the store and tells the observers; a store failure is logged. */
  void reconcile(ModelTokenReservation handle, long actual) {
    try {
      store.reconcile(handle.reservation(), actual);
    } catch (RuntimeException e) {
      // the call is over: the estimate stays charged until it leaves the window
      LOG.warn("Could not reconcile the model tokens of a call on policy '" + handle.policy()
          + "': " + e);
      return;
    }
    for (RateLimitObserver o : observers()) {
      o.onReconcile(handle.policy(), handle.estimate(), actual);
    }
  }

  /**
   * Returns the policies this enforcer applies.
   *
   * @return the policies
   */
  public RateLimitPolicies policies() {
    return policies;
  }

  /**
   * Returns the store this enforcer asks.
   *
   * @return the store
   */
  public RateLimitStore store() {
    return store;
  }

  private List<RateLimitObserver> observers() {
    List<RateLimitObserver> list = observers;
    if (list == null) {
      list = observerProvider.orderedStream().toList();
      observers = list;
    }
    return list;
  }
}
