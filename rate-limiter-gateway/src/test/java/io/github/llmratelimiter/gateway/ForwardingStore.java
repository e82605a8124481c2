package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.StoreAdministration;
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
  public void reconcile(Reservation reservation, long actual) {
    delegate.reconcile(reservation, actual);
  }

  @Override
  public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {
    delegate.chargeModelTokens(levels, keys, modelTokens);
  }

  @Override
  public Optional<PlanAssignments> planAssignments() {
    return delegate.planAssignments();
  }

  @Override
  public Optional<StoreAdministration> administration() {
    return delegate.administration();
  }
}
