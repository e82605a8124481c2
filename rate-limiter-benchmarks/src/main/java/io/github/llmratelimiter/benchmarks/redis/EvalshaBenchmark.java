package io.github.llmratelimiter.benchmarks.redis;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.concurrent.TimeUnit;
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
 * The floor of any one-script decision: a synchronous {@code EVALSHA} of {@code return 1} through
 * Lettuce, every thread on one connection, on its own {@code redis-server}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class EvalshaBenchmark {

  private RedisClientOnServer redis;
  private StatefulRedisConnection<String, String> connection;
  private RedisCommands<String, String> commands;
  private String sha;

  /** Starts Redis, connects and loads the script. */
  @Setup(Level.Trial)
  public void setUp() {
    redis = new RedisClientOnServer();
    connection = redis.client.connect();
    commands = connection.sync();
    sha = commands.scriptLoad("return 1");
  }

  /** Disconnects and stops Redis. */
  @TearDown(Level.Trial)
  public void tearDown() {
    redis.close();
  }

  /** {@code EVALSHA} of {@code return 1}, which must answer 1. */
  @Benchmark
  public long evalshaReturnOne() {
    Long one = commands.evalsha(sha, ScriptOutputType.INTEGER);
    if (one == null || one != 1L) {
      throw new IllegalStateException("EVALSHA return 1 answered " + one);
    }
    return one;
  }
}
