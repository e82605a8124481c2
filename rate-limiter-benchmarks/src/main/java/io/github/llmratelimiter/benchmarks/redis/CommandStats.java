package io.github.llmratelimiter.benchmarks.redis;

/**
 * The commands a Redis server ran and its time in them, from {@code INFO commandstats}, read on an
 * administrative connection of its own (its {@code INFO} calls are counted, and left out here).
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
   * The server's totals so far, {@code INFO} itself left out.
   *
   * @param calls the commands run
   * @param usec the microseconds spent in them ({@code usec})
   */
  public record Totals(long calls, long usec) {}

  /**
   * Reads the totals.
   *
   * @return every command's calls and microseconds, summed, {@code INFO} left out
   */
  public Totals read() {
    String stats = info.commandStats();
    long calls = RedisInfo.totalCalls(stats) - RedisInfo.calls(stats, "info");
    long usec = 0;
    for (String line : stats.split("\r?\n")) {
      if (line.startsWith("cmdstat_") && !line.startsWith("cmdstat_info:")) {
        usec += RedisInfo.usec(line, line.substring("cmdstat_".length(), line.indexOf(':')));
      }
    }
    return new Totals(calls, usec);
  }

  @Override
  public void close() {
    info.close();
  }
}
