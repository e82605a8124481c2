package io.github.llmratelimiter.benchmarks.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.Locale;

/**
 * An administrative connection to a Redis server, on a client of its own (so that its commands
 * are never counted with the measured client's): reads {@code INFO commandstats} and {@code INFO
 * cpu}.
 */
final class RedisInfo implements AutoCloseable {

  private final RedisClient client;
  private final StatefulRedisConnection<String, String> connection;

  RedisInfo(String uri) {
    client = RedisClient.create(uri);
    connection = client.connect();
  }

  /** Returns the connection's synchronous commands, for administration (not measured). */
  RedisCommands<String, String> commands() {
    return connection.sync();
  }

  /** Returns how many times the server ran {@code command} ({@code cmdstat_<command>:calls}). */
  long calls(String command) {
    return calls(connection.sync().info("commandstats"), command);
  }

  /** Returns {@code INFO commandstats}. */
  String commandStats() {
    return connection.sync().info("commandstats");
  }

  /** Zeroes the server's command statistics ({@code CONFIG RESETSTAT}). */
  void resetStats() {
    connection.sync().configResetstat();
  }

  /** Returns the microseconds the server spent in {@code command} ({@code usec}), 0 if never run. */
  static long usec(String commandstats, String command) {
    return field(commandstats, command, "usec=");
  }

  /** Returns the calls of every command in {@code commandstats}. */
  static long totalCalls(String commandstats) {
    long sum = 0;
    for (String line : commandstats.split("\r?\n")) {
      if (line.startsWith("cmdstat_")) {
        sum += field(line, line.substring("cmdstat_".length(), line.indexOf(':')), "calls=");
      }
    }
    return sum;
  }

  /** Returns the CPU seconds the server used, system and user ({@code INFO cpu}). */
  double cpuSeconds() {
    String info = connection.sync().info("cpu");
    return field(info, "used_cpu_sys") + field(info, "used_cpu_user");
  }

  /** Returns the server's version ({@code INFO server}). */
  String version() {
    for (String line : connection.sync().info("server").split("\r?\n")) {
      if (line.startsWith("redis_version:")) {
        return line.substring("redis_version:".length()).trim();
      }
    }
    return "unknown";
  }

  static long calls(String commandstats, String command) {
    return field(commandstats, command, "calls=");
  }

  /** A whole-number field ({@code calls=}, {@code usec=}) of one command's statistics, 0 if absent. */
  private static long field(String commandstats, String command, String name) {
    String prefix = "cmdstat_" + command.toLowerCase(Locale.ROOT) + ":";
    for (String line : commandstats.split("\r?\n")) {
      if (line.startsWith(prefix)) {
        for (String part : line.substring(prefix.length()).split(",")) {
          if (part.startsWith(name)) {
            return Long.parseLong(part.substring(name.length()).trim());
          }
        }
      }
    }
    return 0; // never called
  }

  static double field(String info, String name) {
    for (String line : info.split("\r?\n")) {
      if (line.startsWith(name + ":")) {
        return Double.parseDouble(line.substring(name.length() + 1).trim());
      }
    }
    throw new IllegalStateException("INFO has no " + name);
  }

  @Override
  public void close() {
    connection.close();
    client.shutdown();
  }
}
