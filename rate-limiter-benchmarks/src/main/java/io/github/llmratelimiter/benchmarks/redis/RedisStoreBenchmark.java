package io.github.llmratelimiter.benchmarks.redis;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The limiter on Redis: a sequential {@code GatewayLimiter} (window and bucket of one key) on
 * {@code RedisRateLimitStore}, every thread on the store's one connection.
 *
 * <p>Each iteration checks that every decision took exactly one round trip (one command sent by
 * the client, one {@code EVALSHA} run by the server); any other count, a deny or a Redis error
 * fails the run.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RedisStoreBenchmark {

  /** Keys of the many-keys case. */
  static final int KEY_COUNT = 1_000;

  private final LongAdder decisions = new LongAdder();
  private RedisLimiter redis;
  private String[] keys;

  /** Starts Redis, builds the store and calls every key once. */
  @Setup(Level.Trial)
  public void setUp() {
    redis = new RedisLimiter();
    keys = new String[KEY_COUNT];
    for (int i = 0; i < KEY_COUNT; i++) {
      keys[i] = "tenant-" + i;
      redis.allowed(keys[i]);
    }
  }

  /** Remembers the command counts before an iteration. */
  @Setup(Level.Iteration)
  public void mark() {
    decisions.reset();
    redis.roundTrips.mark();
  }

  /** Checks the iteration's round trips. */
  @TearDown(Level.Iteration)
  public void verify() {
    redis.checkNoErrors();
    redis.roundTrips.verify(decisions.sum());
  }

  /** Stops the store and Redis. */
  @TearDown(Level.Trial)
  public void tearDown() {
    redis.close();
  }

  /** A thread's walk over the keys, starting at its own share of them. */
  @State(Scope.Thread)
  public static class Walk {

    int next;

    /** Starts the walk at the thread's share. */
    @Setup
    public void setUp(org.openjdk.jmh.infra.ThreadParams thread) {
      next = KEY_COUNT * thread.getThreadIndex() / thread.getThreadCount();
    }

    int next() {
      int i = next;
      next = i + 1 == KEY_COUNT ? 0 : i + 1;
      return i;
    }
  }

  /** Every thread calls with the same key. */
  @Benchmark
  public long allowedOneKey() {
    decisions.increment();
    return redis.allowed(keys[0]).remaining();
  }

  /** Each thread walks 1,000 keys. */
  @Benchmark
  public long allowedThousandKeys(Walk walk) {
    decisions.increment();
    return redis.allowed(keys[walk.next()]).remaining();
  }
}
