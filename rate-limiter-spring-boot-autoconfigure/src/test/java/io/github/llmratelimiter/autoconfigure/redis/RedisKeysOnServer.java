package io.github.llmratelimiter.autoconfigure.redis;

import io.github.llmratelimiter.redis.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.util.List;

/** Reads the key names on a test's redis-server with a client of the test's own. */
final class RedisKeysOnServer {

  private RedisKeysOnServer() {}

  /**
   * The names of the keys that match {@code pattern} on {@code server} but the store's monitoring
   * structures (<code>&lt;prefix&gt;:{&lt;tag&gt;}:&lt;budget&gt;:~top|keys|spend:...</code>).
   */
  static List<String> stateKeys(RedisServer server, String pattern) {
    return keys(server, pattern).stream()
        .filter(k -> !k.matches(".*\\}:[^:]*:~(top|keys|spend):[^:]*:[^:]*")).toList();
  }

  /** The names of the keys that match {@code pattern} on {@code server}. */
  static List<String> keys(RedisServer server, String pattern) {
    RedisClient client = RedisClient.create(server.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      return c.sync().keys(pattern);
    } finally {
      client.shutdown();
    }
  }
}
