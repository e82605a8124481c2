package io.github.llmratelimiter.benchmarks.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * A bounded, closed-loop load generator: a fixed number of platform threads, each calling as fast
 * as the answers come back, for a warm-up and then a measured period; the latency of every call
 * that starts in the measured period is kept (no sampling, no coordinated-omission correction:
 * a closed loop's latencies are per call, and its throughput is what the system sustains).
 */
public final class ClosedLoopLoad {

  /** One call of a worker; throws if the answer is wrong, which stops the run. */
  @FunctionalInterface
  public interface Call {

    /**
     * Makes one call.
     *
     * @param worker the calling worker's index, from 0
     * @throws Exception if the call fails or its answer is wrong
     */
    void call(int worker) throws Exception;
  }

  /**
   * What a run measured.
   *
   * @param concurrency the workers
   * @param seconds the measured period's length
   * @param calls the calls started in the measured period
   * @param totalCalls every call made, warm-up included
   * @param latencies the latencies of the measured calls, in nanoseconds
   */
  public record Result(int concurrency, double seconds, long calls, long totalCalls,
      Latencies latencies) {

    /**
     * Returns the throughput of the measured period.
     *
     * @return calls per second
     */
    public double callsPerSecond() {
      return calls / seconds;
    }
  }

  private ClosedLoopLoad() {}

  /**
   * Runs {@code call} from {@code concurrency} threads for {@code warmup}, then for {@code
   * measure}; {@code atStart} runs when the measured period starts, {@code atEnd} when it ends
   * (before the workers' last calls return).
   *
   * @param concurrency the workers, at least 1
   * @param warmup the warm-up, not measured
   * @param measure the measured period, positive
   * @param call what each worker calls
   * @param atStart runs at the start of the measured period, on the calling thread
   * @param atEnd runs at its end, on the calling thread
   * @return the result
   * @throws IllegalStateException if a call failed (with the first failure as cause)
   * @throws InterruptedException if interrupted while waiting
   */
  public static Result run(int concurrency, Duration warmup, Duration measure, Call call,
      Runnable atStart, Runnable atEnd) throws InterruptedException {
    if (concurrency < 1) {
      throw new IllegalArgumentException("concurrency must be >= 1, but was " + concurrency);
    }
    if (measure.isNegative() || measure.isZero()) {
      throw new IllegalArgumentException("measure must be > 0, but was " + measure);
    }
    long begin = System.nanoTime();
    long start = begin + warmup.toNanos();
    long end = start + measure.toNanos();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    LongAdder total = new LongAdder();
    LatencyRecorder[] recorders = new LatencyRecorder[concurrency];
    List<Thread> workers = new ArrayList<>();
    for (int w = 0; w < concurrency; w++) {
      int worker = w;
      LatencyRecorder recorder = recorders[w] = new LatencyRecorder();
      Thread t = new Thread(() -> {
        try {
          while (failure.get() == null) {
            long t0 = System.nanoTime();
            if (t0 - end >= 0) {
              return;
            }
            call.call(worker);
            long t1 = System.nanoTime();
            total.increment();
            if (t0 - start >= 0) {
              recorder.record(t1 - t0);
            }
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "load-" + w);
      t.setDaemon(true);
      workers.add(t);
      t.start();
    }
    sleepUntil(start, failure);
    atStart.run();
    sleepUntil(end, failure);
    atEnd.run();
    for (Thread t : workers) {
      t.join(TimeUnit.MINUTES.toMillis(1));
      if (t.isAlive()) {
        failure.compareAndSet(null, new IllegalStateException(t.getName() + " did not stop"));
      }
    }
    Throwable e = failure.get();
    if (e != null) {
      throw new IllegalStateException("a call failed: " + e, e);
    }
    long[][] all = new long[concurrency][];
    for (int w = 0; w < concurrency; w++) {
      all[w] = recorders[w].values();
    }
    Latencies latencies = Latencies.of(all);
    return new Result(concurrency, measure.toNanos() / 1e9, latencies.count(), total.sum(),
        latencies);
  }

  private static void sleepUntil(long deadline, AtomicReference<Throwable> failure) {
    for (long left = deadline - System.nanoTime(); left > 0 && failure.get() == null;
        left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
    }
  }

  /** One worker's latencies, in a growing array. */
  private static final class LatencyRecorder {

    private long[] values = new long[1 << 14];
    private int size;

    void record(long nanos) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = nanos;
    }

    long[] values() {
      return Arrays.copyOf(values, size);
    }
  }
}
