package io.github.llmratelimiter.benchmarks.redis;

import java.util.Locale;

/**
 * Checks that each decision took exactly one round trip: between {@link #mark()} and {@link
 * #verify(long)}, the store's client completed one command per decision (counted client-side by
 * {@link CommandCounter}) and the server ran one script call ({@code EVALSHA}, or {@code EVAL}
 * after a script flush) per decision ({@code INFO commandstats}).
 */
final class RoundTrips {

  private final CommandCounter client;
  private final RedisInfo server;
  private long clientMark;
  private long scriptMark;

  RoundTrips(CommandCounter client, RedisInfo server) {
    this.client = client;
    this.server = server;
  }

  /** Remembers the counts before the decisions to check. */
  void mark() {
    clientMark = client.total();
    scriptMark = scriptCalls();
  }

  /**
   * Returns the round trips per decision since {@link #mark()}, which must be exactly 1.
   *
   * @param decisions the decisions made since {@link #mark()}
   * @return 1.0
   * @throws IllegalStateException if the client sent, or the server ran, any other number of
   *     commands
   */
  double verify(long decisions) {
    long sent = client.total() - clientMark;
    long scripts = scriptCalls() - scriptMark;
    if (decisions <= 0 || sent != decisions || scripts != decisions) {
      throw new IllegalStateException(String.format(Locale.ROOT,
          "not one round trip per decision: %d decisions, %d commands sent (%s), %d script calls",
          decisions, sent, client.snapshot(), scripts));
    }
    return (double) sent / decisions;
  }

  private long scriptCalls() {
    return server.calls("evalsha") + server.calls("eval");
  }
}
