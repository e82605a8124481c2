package io.github.llmratelimiter.benchmarks.inprocess;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Not a limiter: the primitives every per-key, locked limiter on the system clock pays on each
 * call, measured in the same run so that the limiter's figures can be read against a floor. No
 * limiter that looks its key up, locks it and reads {@link System#nanoTime()} once can beat
 * {@link #mapGetLockNanoTime}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class FloorBenchmark {

  private final ConcurrentHashMap<String, Slot> slots = new ConcurrentHashMap<>();
  private final Slot slot = new Slot();
  private String[] keys;

  /** Fills the map with 10,000 keys. */
  @Setup
  public void setUp() {
    keys = Limits.keys("tenant", Limits.KEY_COUNT);
    for (String key : keys) {
      slots.put(key, new Slot());
    }
  }

  /** A lock and the one field it guards. */
  @SuppressWarnings("serial")
  static final class Slot extends ReentrantLock {
    long last;
  }

  /** One read of the system clock, as {@code Ticker.system()} does. */
  @Benchmark
  public long nanoTime() {
    return System.nanoTime();
  }

  /** An uncontended lock and unlock of a {@link ReentrantLock}. */
  @Benchmark
  public long lockUnlock() {
    slot.lock();
    try {
      return ++slot.last;
    } finally {
      slot.unlock();
    }
  }

  /**
   * The floor of a two-level hierarchy: two lookups and two locks (the levels' keys differ), one
   * clock read, a store under both locks.
   */
  @Benchmark
  public long twoMapGetsTwoLocksNanoTime() {
    Slot a = slots.get(keys[0]);
    Slot b = slots.get(keys[1]);
    a.lock();
    try {
      b.lock();
      try {
        long now = System.nanoTime();
        a.last = now;
        b.last = now;
        return now;
      } finally {
        b.unlock();
      }
    } finally {
      a.unlock();
    }
  }

  /** A {@link ConcurrentHashMap} lookup, a lock, one clock read and a store under the lock. */
  @Benchmark
  public long mapGetLockNanoTime() {
    Slot s = slots.get(keys[0]);
    s.lock();
    try {
      s.last = System.nanoTime();
      return s.last;
    } finally {
      s.unlock();
    }
  }
}
