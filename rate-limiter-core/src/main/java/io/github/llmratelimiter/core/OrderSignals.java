package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The wake-ups of the in-memory store's upstream order: the listeners of one JVM, told on a
 * delivery thread of their own.
 *
 * <p>A signal returns at once: the listeners are told on one daemon thread shared by the in-memory
 * stores of the JVM, which starts with a signal that finds a listener and ends after a second idle
 * (so nothing has to be closed).
 * The signaller is often a call that just gave back a slot, possibly on an event loop; whatever the
 * listeners run to resume their waiting calls neither runs on nor delays its thread. Signals of one
 * upstream that arrive while one of its deliveries is pending are told once. A listener that
 * throws is logged and the others are still told.
 */
final class OrderSignals {

  private static final System.Logger LOG = System.getLogger(OrderSignals.class.getName());

  /** A registered listener; once closed, it is told nothing more. */
  private final class Registration implements AutoCloseable {
    final Consumer<String> listener;
    volatile boolean closed;

    Registration(Consumer<String> listener) {
      this.listener = listener;
    }

    @Override
    public void close() {
      closed = true;
      listeners.remove(this);
    }
  }

  private final CopyOnWriteArrayList<Registration> listeners = new CopyOnWriteArrayList<>();
  /** The upstreams with a delivery queued and not yet started. */
  private final Set<String> pending = ConcurrentHashMap.newKeySet();

  /** The delivery thread of every in-memory store's signals, made on first use. */
  private static final class Delivery {
    static final ThreadPoolExecutor EXECUTOR = new ThreadPoolExecutor(0, 1, 1, TimeUnit.SECONDS,
        new LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, "rate-limiter-upstream-signals");
          t.setDaemon(true);
          return t;
        });
  }

  /** Registers a listener; the handle's {@code close} removes it. */
  AutoCloseable listen(Consumer<String> listener) {
    Registration r = new Registration(Args.notNull("listener", listener));
    listeners.add(r);
    return r;
  }

  /** Queues a delivery of {@code upstream} to every listener, unless one is already queued. */
  void signal(String upstream) {
    Args.notBlank("upstream", upstream);
    if (listeners.isEmpty() || !pending.add(upstream)) {
      return;
    }
    Delivery.EXECUTOR.execute(() -> {
      pending.remove(upstream); // a signal from now on queues a delivery of its own
      for (Registration r : listeners) {
        tell(r, upstream);
      }
    });
  }

  private static void tell(Registration r, String upstream) {
    if (r.closed) {
      return;
    }
    try {
      r.listener.accept(upstream);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING,
          "a listener of the upstream order failed on a signal of upstream '" + upstream + "'", e);
    }
  }
}
