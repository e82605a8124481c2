package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import java.util.List;
import java.util.Optional;

/** A store that hands every operation to another, for tests that change or record a few of them. */
public abstract class ForwardingStore implements RateLimitStore {

  /** The store every operation goes to unless a subclass overrides it. */
  protected final RateLimitStore delegate;

  /**
   * Creates the store.
   *
   * @param delegate the store to forward to
   */
  protected ForwardingStore(RateLimitStore delegate) {
    this.delegate = delegate;
  }

  @Override
  public Decision acquire(List<Budget> levels, List<String> keys, double cost, Composition c) {
    return delegate.acquire(levels, keys, cost, c);
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost, long estimate,
      Composition c) {
    return delegate.reserve(levels, keys, cost, estimate, c);
  }

  @Override
  public void release(Reservation reservation) {
    delegate.release(reservation);
  }

  @Override
  public Optional<String> assignedPlan(String key) {
    return delegate.assignedPlan(key);
  }

  @Override
  public void assignPlan(String key, String plan) {
    delegate.assignPlan(key, plan);
  }

  @Override
  public void reconcile(Reservation reservation, long actual) {
    delegate.reconcile(reservation, actual);
  }

  @Override
  public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {
    delegate.chargeModelTokens(levels, keys, modelTokens);
  }

  @Override
  public Optional<KeySnapshot> inspect(Budget budget, String key) {
    return delegate.inspect(budget, key);
  }

  @Override
  public List<KeySnapshot> top(Budget budget, int limit) {
    return delegate.top(budget, limit);
  }

  @Override
  public boolean reset(Budget budget, String key) {
    return delegate.reset(budget, key);
  }

  @Override
  public long trackedKeys(Budget budget) {
    return delegate.trackedKeys(budget);
  }
}
