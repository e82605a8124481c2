package io.github.llmratelimiter.core;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/** Runs a store's maintenance steps back to back on a thread of its own, until closed. */
final class FlatOutMaintenance implements AutoCloseable {

  private final AtomicBoolean done = new AtomicBoolean();
  private final CompletableFuture<Void> steps = new CompletableFuture<>();

  FlatOutMaintenance(InMemoryStore store) {
    Thread t = new Thread(() -> {
      try {
        while (!done.get()) {
          store.cleanUp();
        }
        steps.complete(null);
      } catch (Throwable e) {
        steps.completeExceptionally(e);
      }
    }, "flat-out-maintenance");
    t.setDaemon(true);
    t.start();
  }

  /** Stops the steps; rethrows what a step threw. */
  @Override
  public void close() throws Exception {
    done.set(true);
    steps.get(30, TimeUnit.SECONDS);
  }
}
