package io.github.llmratelimiter.benchmarks.load;

import java.util.concurrent.TimeUnit;

/** Stops the processes the benchmarks start (redis-server, the sample gateway). */
public final class ChildProcesses {

  private ChildProcesses() {}

  /**
   * Asks {@code process} to stop (SIGTERM), and kills it if it has not stopped within {@code
   * graceSeconds}.
   *
   * @param process a process this JVM started
   * @param graceSeconds how long to wait for it to stop by itself
   */
  public static void stop(Process process, long graceSeconds) {
    if (!process.isAlive()) {
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(graceSeconds, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
