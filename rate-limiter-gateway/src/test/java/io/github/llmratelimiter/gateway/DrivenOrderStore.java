package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.ProviderReport;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.Upstream;
import io.github.llmratelimiter.core.UpstreamOrder;
import io.github.llmratelimiter.core.UpstreamStatus;
import io.github.llmratelimiter.core.UpstreamTurn;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A store that hands every operation, its upstreams' included, to another, and gives its upstream
 * order with the wake-ups told on a {@link ManualScheduler} (at once, on the thread that advances
 * time) instead of the order's own delivery thread, so that a test on a driven clock runs on one
 * thread. Everything else of the order (its ids, its counters, the gate in the store's admission)
 * is the other store's. Without an order, it keeps none: every room orders its own calls. A test
 * may count the order's {@code first} calls, drop its signals, or make it fail (a store down).
 */
final class DrivenOrderStore extends ForwardingStore {

  private final @Nullable Driven order;
  /** How many times the order was asked for its first call. */
  volatile int firsts;
  /** The settlements the order was told, and the upstream decisions the store took. */
  volatile int settles;
  volatile int decisions;
  /** Whether signals are dropped (a subscription that reconnects). */
  volatile boolean dropSignals;
  /** Whether every call of the order fails, as on a store that does not answer. */
  volatile boolean failing;

  /**
   * Creates the store.
   *
   * @param delegate the store that decides
   * @param scheduler tells the order's listeners, or {@code null} for a store that keeps no order
   */
  DrivenOrderStore(RateLimitStore delegate, @Nullable ManualScheduler scheduler) {
    super(delegate);
    UpstreamOrder real = delegate.upstreamOrder();
    this.order = scheduler == null || real == null ? null : new Driven(real, scheduler);
  }

  @Override
  public @Nullable UpstreamOrder upstreamOrder() {
    return order;
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream) {
    decisions++;
    return delegate.reserve(levels, keys, cost, estimate, composition, upstream);
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream) {
    decisions++;
    return delegate.reserveAsync(levels, keys, cost, estimate, composition, upstream);
  }

  @Override
  public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
      Consumption estimate, Composition composition, Upstream upstream, UpstreamTurn turn) {
    decisions++;
    return order == null ? delegate.reserve(levels, keys, cost, estimate, composition, upstream)
        : delegate.reserve(levels, keys, cost, estimate, composition, upstream, turn);
  }

  @Override
  public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
      double cost, Consumption estimate, Composition composition, Upstream upstream,
      UpstreamTurn turn) {
    decisions++;
    return order == null
        ? delegate.reserveAsync(levels, keys, cost, estimate, composition, upstream)
        : delegate.reserveAsync(levels, keys, cost, estimate, composition, upstream, turn);
  }

  @Override
  public void reconcile(Reservation reservation, Consumption actual) {
    delegate.reconcile(reservation, actual);
  }

  @Override
  public void report(Upstream upstream, ProviderReport report) {
    delegate.report(upstream, report);
  }

  @Override
  public UpstreamStatus upstreamStatus(Upstream upstream) {
    return delegate.upstreamStatus(upstream);
  }

  /** The other store's order, its wake-ups told on the scheduler. */
  private final class Driven implements UpstreamOrder {
    private final UpstreamOrder real;
    private final ManualScheduler scheduler;
    private final CopyOnWriteArrayList<Consumer<String>> listeners = new CopyOnWriteArrayList<>();

    Driven(UpstreamOrder real, ManualScheduler scheduler) {
      this.real = real;
      this.scheduler = scheduler;
    }

    @Override
    public CompletionStage<String> enter(Upstream upstream, UpstreamTurn turn, Duration maxWait) {
      return failing ? down() : real.enter(upstream, turn, maxWait);
    }

    @Override
    public CompletionStage<Void> leave(Upstream upstream, String waiter) {
      return failing ? down() : real.leave(upstream, waiter);
    }

    @Override
    public CompletionStage<Optional<String>> first(Upstream upstream) {
      firsts++;
      return failing ? down() : real.first(upstream);
    }

    private <T> CompletionStage<T> down() {
      return CompletableFuture.failedFuture(new IllegalStateException("the order is down"));
    }

    @Override
    public CompletionStage<Void> settled(Upstream upstream, UpstreamTurn turn, long actual) {
      settles++;
      return real.settled(upstream, turn, actual);
    }

    @Override
    public void signal(String upstream) {
      if (dropSignals) {
        return;
      }
      scheduler.schedule(() -> listeners.forEach(l -> l.accept(upstream)), 0);
    }

    @Override
    public AutoCloseable listen(Consumer<String> listener) {
      listeners.add(listener);
      return () -> listeners.remove(listener);
    }

    @Override
    public CompletionStage<Long> waiting(Upstream upstream) {
      return real.waiting(upstream);
    }

    @Override
    public Duration pollInterval() {
      return real.pollInterval();
    }
  }
}
