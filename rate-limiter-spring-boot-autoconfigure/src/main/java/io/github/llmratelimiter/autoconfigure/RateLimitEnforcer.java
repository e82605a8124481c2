package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.autoconfigure.RateLimiterProperties.StoreFailure;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.RateLimitStore;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The one place the Spring layer asks the store for a decision: it turns a policy and a caller into
 * the levels and keys of one {@link RateLimitStore#acquire(List, List, double,
 * io.github.llmratelimiter.core.Composition) store call}, so every level of a hierarchy is decided
 * atomically, and tells the {@link RateLimitObserver}s.
 *
 * <p>It depends only on the {@link RateLimitStore} interface: the in-memory store and distributed
 * stores are interchangeable.
 */
public final class RateLimitEnforcer {

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
    try {
      Decision decision = store.acquire(levels, keys, cost, policies.composition());
      outcome = new RateLimitOutcome(policy, key, decision, levels, false);
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
