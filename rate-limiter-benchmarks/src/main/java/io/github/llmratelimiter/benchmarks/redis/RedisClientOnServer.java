package io.github.llmratelimiter.benchmarks.redis;

import io.lettuce.core.RedisClient;

/** A plain Lettuce client on a {@code redis-server} of its own, for the peer benchmarks. */
final class RedisClientOnServer implements AutoCloseable {

  final RedisServer server = RedisServer.start();
  final RedisClient client = RedisClient.create(server.uri());

  /** Shuts the client down (closing its connections) and stops the server. */
  @Override
  public void close() {
    try {
      client.shutdown();
    } finally {
      server.close();
    }
  }
}
