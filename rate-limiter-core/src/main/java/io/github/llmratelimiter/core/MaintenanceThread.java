package io.github.llmratelimiter.core;

import java.util.concurrent.ScheduledThreadPoolExecutor;

/** The daemon thread of {@link MaintenanceScheduler#every}, started when it is first used. */
final class MaintenanceThread {

  /** One thread for every store: a step is short, and steps of different stores may queue. */
  static final ScheduledThreadPoolExecutor EXECUTOR = create();

  private MaintenanceThread() {}

  private static ScheduledThreadPoolExecutor create() {
    ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "rate-limiter-maintenance");
      t.setDaemon(true);
      return t;
    });
    executor.setRemoveOnCancelPolicy(true); // a closed store's task leaves the queue at once
    return executor;
  }
}
