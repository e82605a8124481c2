package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import io.github.llmratelimiter.core.internal.OrderSignals;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The in-memory store's fair order of upstreams' waiting calls: per upstream, an {@link
 * UpstreamQueue} under the monitor of the upstream's {@link UpstreamState}, the monitor the store's
 * admission holds while it decides the upstream, so that checking the order, dequeuing the
 * admitted call and counting it are one step with the decision. Deadlines are read on the store's
 * ticker. A tenant's counter is forgotten after {@link UpstreamQueue#FORGET_AFTER} (a minute) of
 * neither waiting nor being served. Signals reach the listeners of this JVM ({@link
 * OrderSignals}). Every stage it returns is already complete.
 */
final class InMemoryUpstreamOrder implements UpstreamOrder {

  private final InMemoryStore store;
  private final Ticker ticker;
  private final OrderSignals signals = new OrderSignals();
  private final AtomicLong ids = new AtomicLong();

  InMemoryUpstreamOrder(InMemoryStore store, Ticker ticker) {
    this.store = store;
    this.ticker = ticker;
  }

  @Override
  public CompletionStage<String> enter(Upstream upstream, UpstreamTurn turn, Duration maxWait) {
    UpstreamState s = state(upstream);
    Args.notNull("turn", turn);
    long nanos = Args.nanos("maxWait", maxWait);
    synchronized (s) {
      // numbered under the monitor: an upstream's ids grow in the order its calls enter
      String id = "w" + Long.toString(ids.incrementAndGet(), 36);
      s.queue().enter(id, turn, nanos, ticker.read());
      return CompletableFuture.completedFuture(id);
    }
  }

  @Override
  public CompletionStage<Void> leave(Upstream upstream, String waiter) {
    UpstreamState s = state(upstream);
    Args.notBlank("waiter", waiter);
    synchronized (s) {
      s.queue().leave(waiter, ticker.read());
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public CompletionStage<Optional<String>> first(Upstream upstream) {
    UpstreamState s = state(upstream);
    synchronized (s) {
      return CompletableFuture.completedFuture(
          Optional.ofNullable(s.queue().first(ticker.read())));
    }
  }

  @Override
  public CompletionStage<Void> settled(Upstream upstream, UpstreamTurn turn, long actual) {
    UpstreamState s = state(upstream);
    Args.notNull("turn", turn);
    Args.notNegative("actual", actual);
    synchronized (s) {
      s.queue().settled(turn, actual, ticker.read());
    }
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public void signal(String upstream) {
    signals.signal(upstream);
  }

  @Override
  public AutoCloseable listen(Consumer<String> listener) {
    return signals.listen(listener);
  }

  @Override
  public CompletionStage<Long> waiting(Upstream upstream) {
    UpstreamState s = state(upstream);
    synchronized (s) {
      return CompletableFuture.completedFuture(s.queue().waiting(ticker.read()));
    }
  }

  private UpstreamState state(Upstream upstream) {
    return store.upstreamState(Args.notNull("upstream", upstream));
  }
}
