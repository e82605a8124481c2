package io.github.llmratelimiter.core;

import java.lang.ref.WeakReference;
import java.util.concurrent.Future;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link MaintenanceScheduler} runs for one store: a {@link InMemoryStore#cleanUp()} step.
 *
 * <p>The store is held weakly, so a scheduler never keeps an unreachable store alive: once the
 * store has been collected, the next run cancels the schedule. A step that fails is logged and the
 * next run tries again; the task itself never throws, so a scheduler never stops running it.
 */
final class MaintenanceTask implements Runnable {

  private static final System.Logger LOG = System.getLogger(InMemoryStore.class.getName());

  private final WeakReference<InMemoryStore> store;
  private volatile @Nullable Future<?> future;

  MaintenanceTask(InMemoryStore store) {
    this.store = new WeakReference<>(store);
  }

  /** Remembers the schedule, to cancel it once the store is gone. */
  void scheduled(Future<?> schedule) {
    this.future = schedule;
    if (store.get() == null) {
      schedule.cancel(false);
    }
  }

  @Override
  public void run() {
    InMemoryStore s = store.get();
    if (s == null) {
      Future<?> f = future;
      if (f != null) {
        f.cancel(false);
      }
      return;
    }
    try {
      s.cleanUp();
    } catch (RuntimeException e) {
      // a step throws only what the ticker throws: no key is in the message
      LOG.log(System.Logger.Level.WARNING, "in-memory rate-limit store maintenance step failed", e);
    }
  }
}
