package io.github.llmratelimiter.benchmarks.redis;

/**
 * The scripts a Redis server ran ({@code EVALSHA} and {@code EVAL}) and its time in them, from
 * {@code INFO commandstats}, read on an administrative connection of its own. A script's time
 * includes the commands it calls, which the statistics also count under their own names: only the
 * scripts are summed, each one round trip of its client.
 */
public final class CommandStats implements AutoCloseable {

  private final RedisInfo info;

  private CommandStats(RedisInfo info) {
    this.info = info;
  }

  /**
   * Connects to a server.
   *
   * @param server the server
   * @return the statistics' reader
   */
  public static CommandStats of(RedisServer server) {
    return new CommandStats(new RedisInfo(server.uri()));
  }

  /**
   * The server's script totals so far.
   *
   * @param calls the scripts run ({@code EVALSHA} and {@code EVAL} calls)
   * @param usec the microseconds spent in them ({@code usec})
   */
  public record Totals(long calls, long usec) {}

  /**
   * Reads the totals.
   *
   * @return the scripts' calls and microseconds, summed
   */
  public Totals read() {
    return totals(info);
  }

  /** The script totals of the server {@code info} reads. */
  static Totals totals(RedisInfo info) {
    String stats = info.commandStats();
    return new Totals(RedisInfo.calls(stats, "evalsha") + RedisInfo.calls(stats, "eval"),
        RedisInfo.usec(stats, "evalsha") + RedisInfo.usec(stats, "eval"));
  }

  @Override
  public void close() {
    info.close();
  }
}
