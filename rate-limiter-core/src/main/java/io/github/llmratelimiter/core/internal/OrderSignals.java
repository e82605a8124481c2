package io.github.llmratelimiter.core.internal;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The listeners of an upstream order's wake-ups in one JVM, told on a delivery thread of their
 * own.
 *
 * <p>A signal returns at once: the listeners are told on one daemon thread shared by every order
 * of the JVM, which starts with a signal that finds a listener and ends after a second idle (so
 * nothing has to be shut down). The signaller is often a call that just gave back a slot, or a
 * Redis client's event loop; whatever the listeners run to resume their waiting calls neither
 * runs on nor delays its thread. Listeners must not block: one that does delays the signals of
 * every order. A listener that throws is logged and the others are still told. Thread-safe.
 */
public final class OrderSignals {

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

  /** The delivery thread of every order's signals, made on first use. */
  private static final class Delivery {
    static final ThreadPoolExecutor EXECUTOR = new ThreadPoolExecutor(0, 1, 1, TimeUnit.SECONDS,
        new LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, "rate-limiter-upstream-signals");
          t.setDaemon(true);
          return t;
        });
  }

  /**
   * Registers a listener.
   *
   * @param listener told the name of every upstream signalled from now on
   * @return a handle whose {@code close} removes the listener
   * @throws IllegalArgumentException if the listener is null
   */
  public AutoCloseable listen(Consumer<String> listener) {
    Registration r = new Registration(Args.notNull("listener", listener));
    listeners.add(r);
    return r;
  }

  /**
   * Queues a delivery of an upstream's name to every listener registered now; returns at once.
   *
   * @param upstream the upstream's name
   * @throws IllegalArgumentException if the name is null or blank
   */
  public void signal(String upstream) {
    Args.notBlank("upstream", upstream);
    if (listeners.isEmpty()) {
      return;
    }
    Delivery.EXECUTOR.execute(() -> {
      for (Registration r : listeners) {
        tell(r, upstream);
      }
    });
  }

  /** Removes every listener: none is told anything more. */
  public void clear() {
    for (Registration r : listeners) {
      r.close();
    }
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
