package io.github.llmratelimiter.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.tracing.Tracing;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * A store's link to Redis and, when the store created its own Lettuce client, the watch on that
 * client's event loops.
 *
 * <p>A client the store creates reconnects by itself (with an exponential delay from 10 ms to 1 s
 * unless the application's resources are given), rejects commands while disconnected, and never
 * expires a command (a late reply is read, and refunded); a Cluster client also follows topology
 * changes. Closing the link shuts such a client down, and the resources too unless they are the
 * application's. A client given to the store is used as it is, and never shut down.
 *
 * @param link the link the store sends its commands over
 * @param loop the watch on the event loops of a client the store created, else null
 */
record RedisConnection(RedisLink link, @Nullable EventLoopWatch loop) {

  /**
   * Opens the link: on {@code client} or {@code clusterClient} when one is given, else on a new
   * client for {@code seeds} (a Cluster) or {@code uri} (standalone or Sentinel).
   */
  static RedisConnection open(@Nullable RedisURI uri, @Nullable List<RedisURI> seeds,
      @Nullable RedisClient client, @Nullable RedisClusterClient clusterClient,
      @Nullable ClientResources shared, boolean traceCommands, @Nullable SslOptions sslOptions,
      Duration commandTimeout, Duration connectTimeout) {
    if (client != null) {
      return new RedisConnection(RedisLink.standalone(client, uri, commandTimeout, null), null);
    }
    if (clusterClient != null) {
      return new RedisConnection(RedisLink.cluster(clusterClient, commandTimeout, null), null);
    }
    EventLoopWatch watch = new EventLoopWatch(shared != null ? shared.nettyCustomizer() : null);
    // the application's resources are shared as they are (event loops, timer), the watch added
    // and their tracing left out unless asked for
    ClientResources resources = shared != null
        ? shared.mutate().nettyCustomizer(watch)
            .tracing(traceCommands ? shared.tracing() : Tracing.disabled()).build()
        : DefaultClientResources.builder()
            .reconnectDelay(Delay.exponential(
                Duration.ofMillis(10), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS))
            .nettyCustomizer(watch)
            .build();
    Runnable releaseResources = shared != null ? () -> {} : () -> resources.shutdown();
    SocketOptions socket = SocketOptions.builder().connectTimeout(connectTimeout).build();
    RedisLink link;
    if (seeds != null) {
      RedisClusterClient c = RedisClusterClient.create(resources, seeds);
      ClusterClientOptions.Builder options = ClusterClientOptions.builder();
      common(options, sslOptions, socket);
      c.setOptions(options
          .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
              .enableAllAdaptiveRefreshTriggers()
              .enablePeriodicRefresh(Duration.ofSeconds(30))
              .build())
          .build());
      link = RedisLink.cluster(c, commandTimeout, () -> {
        c.shutdown();
        releaseResources.run();
      });
    } else {
      RedisClient c = RedisClient.create(resources);
      ClientOptions.Builder options = ClientOptions.builder();
      common(options, sslOptions, socket);
      c.setOptions(options.build());
      link = RedisLink.standalone(c, uri, commandTimeout, () -> {
        c.shutdown();
        releaseResources.run();
      });
    }
    return new RedisConnection(link, watch);
  }

  /**
   * The options a standalone and a Cluster client share: TLS when given, reconnecting, commands
   * rejected while disconnected, and no command expiry (a late reply is read, and refunded).
   */
  private static void common(ClientOptions.Builder options, @Nullable SslOptions sslOptions,
      SocketOptions socket) {
    if (sslOptions != null) {
      options.sslOptions(sslOptions);
    }
    options.autoReconnect(true)
        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
        .socketOptions(socket)
        .timeoutOptions(TimeoutOptions.create());
  }
}
