package io.github.llmratelimiter.benchmarks.inprocess;

import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * One benchmark thread's keys: a key of its own ({@code tenant-<thread index>}), and a round-robin
 * walk over {@value Limits#KEY_COUNT} keys that starts at the thread's own share of them, so that
 * threads rarely meet on one key.
 */
@State(Scope.Thread)
public class ThreadKeys {

  int index;
  String ownKey;
  private int count;
  private int next;

  /** Reads the thread's index. */
  @Setup
  public void setUp(ThreadParams thread) {
    index = thread.getThreadIndex();
    ownKey = "tenant-" + index;
    count = Limits.KEY_COUNT;
    next = (int) ((long) count * index / thread.getThreadCount());
  }

  /** Returns the next key index of the walk, wrapping around after the last. */
  int next() {
    int i = next;
    next = i + 1 == count ? 0 : i + 1;
    return i;
  }
}
