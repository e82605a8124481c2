package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The store's one connection to Redis (a standalone server, the master a Sentinel URI names at each
 * connection and reconnection, or a Cluster), opened lazily and without ever blocking a caller
 * longer than the command timeout: a connection attempt runs in the background, and a caller waits
 * for it at most that long. Once open, Lettuce reconnects by itself.
 *
 * <p>Commands sent through the asynchronous API have no timeout of Lettuce's own: a late reply
 * is always read (the store refunds what a call charged after its caller stopped waiting), and
 * callers stop waiting by their own measure ({@link Replies}). The synchronous API, for monitoring
 * calls only, waits at most the command timeout.
 */
final class RedisLink implements AutoCloseable {

  private final Supplier<CompletableFuture<? extends StatefulConnection<String, String>>> connector;
  private final Supplier<CompletableFuture<? extends StatefulRedisPubSubConnection<String, String>>>
      pubSubConnector;
  private final @Nullable Runnable release;
  private final Duration timeout;
  private final boolean cluster;
  private @Nullable CompletableFuture<? extends StatefulConnection<String, String>> pending;
  private volatile @Nullable RedisClusterCommands<String, String> commands;
  private volatile @Nullable RedisClusterAsyncCommands<String, String> async;
  private volatile @Nullable StatefulRedisClusterConnection<String, String> clusterConnection;
  private volatile boolean closed;

  private RedisLink(
      Supplier<CompletableFuture<? extends StatefulConnection<String, String>>> connector,
      Supplier<CompletableFuture<? extends StatefulRedisPubSubConnection<String, String>>>
          pubSubConnector,
      Duration timeout,
      @Nullable Runnable release,
      boolean cluster) {
    this.connector = connector;
    this.pubSubConnector = pubSubConnector;
    this.release = release;
    this.timeout = timeout;
    this.cluster = cluster;
  }

  /** How long a synchronous caller waits for a connection and for a monitoring command. */
  Duration timeout() {
    return timeout;
  }

  /** Whether this is a link to a Redis Cluster, where one script's keys share one hash slot. */
  boolean cluster() {
    return cluster;
  }

  /**
   * A link to a standalone server: synchronous callers wait up to {@code timeout} for a connection
   * and for a monitoring command; {@code release} (if any) runs on close, after the connection.
   */
  static RedisLink standalone(RedisClient client, RedisURI uri, Duration timeout,
      @Nullable Runnable release) {
    return new RedisLink(() -> client.connectAsync(StringCodec.UTF8, uri).toCompletableFuture(),
        () -> client.connectPubSubAsync(StringCodec.UTF8, uri).toCompletableFuture(),
        timeout, release, false);
  }

  /** A link to a Cluster; see {@link #standalone}. */
  static RedisLink cluster(RedisClusterClient client, Duration timeout,
      @Nullable Runnable release) {
    return new RedisLink(
        () -> client.refreshPartitionsAsync().toCompletableFuture() // a cluster connection needs them
            .thenCompose(loaded -> client.connectAsync(StringCodec.UTF8)),
        () -> client.refreshPartitionsAsync().toCompletableFuture()
            .thenCompose(loaded -> client.connectPubSubAsync(StringCodec.UTF8)),
        timeout, release, true);
  }

  /**
   * The Cluster's topology as the open cluster connection knows it (Lettuce keeps it up to date):
   * which master serves which hash slot; {@code null} off a Cluster and until the connection is
   * open.
   */
  @Nullable Partitions partitions() {
    StatefulRedisClusterConnection<String, String> c = clusterConnection;
    return c == null ? null : c.getPartitions();
  }

  /**
   * Sends a {@code PING} to the Cluster node {@code nodeId} over the cluster connection's own
   * connection to it (the one its commands take); completes with the reply.
   *
   * @throws IllegalStateException off a Cluster or before the connection is open
   */
  CompletableFuture<String> ping(String nodeId) {
    StatefulRedisClusterConnection<String, String> c = clusterConnection;
    if (c == null) {
      throw new IllegalStateException("no open Cluster connection");
    }
    return c.getConnectionAsync(nodeId)
        .thenCompose(node -> node.async().ping().toCompletableFuture());
  }

  /**
   * Opens a connection of its own for publish/subscribe (on a Cluster, to one node: a classic
   * {@code PUBLISH} on any node reaches it), which Lettuce reconnects and subscribes again by
   * itself; the caller closes it. Never blocks.
   */
  CompletableFuture<? extends StatefulRedisPubSubConnection<String, String>> pubSub() {
    if (closed) {
      return CompletableFuture.failedFuture(new RedisConnectionException("the store is closed"));
    }
    return pubSubConnector.get();
  }

  /**
   * Returns the synchronous commands, connecting first if needed.
   *
   * @throws RedisConnectionException if no connection is open within the timeout
   */
  RedisClusterCommands<String, String> commands() {
    RedisClusterCommands<String, String> c = commands;
    return c != null ? c : connect(timeout);
  }

  /**
   * Returns the asynchronous commands once a connection is open, starting a connection attempt if
   * none is under way; never blocks. The future fails if the attempt fails; the caller's own wait
   * bounds how long it waits for an attempt that hangs.
   */
  CompletableFuture<RedisClusterAsyncCommands<String, String>> async() {
    RedisClusterAsyncCommands<String, String> a = async;
    if (a != null) {
      return CompletableFuture.completedFuture(a);
    }
    CompletableFuture<? extends StatefulConnection<String, String>> f;
    try {
      f = attempt();
    } catch (RedisConnectionException e) {
      return CompletableFuture.failedFuture(e);
    }
    return f.handle((connection, failure) -> {
      if (failure != null) {
        throw new RedisConnectionException("cannot connect to Redis", failure);
      }
      opened(connection);
      RedisClusterAsyncCommands<String, String> opened = async;
      if (opened == null) {
        throw new RedisConnectionException("the store is closed");
      }
      return opened;
    });
  }

  /**
   * Returns the synchronous commands, waiting up to {@code wait} for a connection.
   *
   * @throws RedisConnectionException if no connection is open within {@code wait}
   */
  RedisClusterCommands<String, String> commands(Duration wait) {
    RedisClusterCommands<String, String> c = commands;
    return c != null ? c : connect(wait);
  }

  /** The connection attempt under way, started if there is none (or the last one failed). */
  private synchronized CompletableFuture<? extends StatefulConnection<String, String>> attempt() {
    if (closed) {
      throw new RedisConnectionException("the store is closed");
    }
    if (pending == null || pending.isCompletedExceptionally()) {
      pending = connector.get();
    }
    return pending;
  }

  private RedisClusterCommands<String, String> connect(Duration wait) {
    CompletableFuture<? extends StatefulConnection<String, String>> f = attempt();
    StatefulConnection<String, String> connection;
    try {
      connection = f.get(wait.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RedisConnectionException("interrupted while connecting to Redis", e);
    } catch (ExecutionException e) {
      throw new RedisConnectionException("cannot connect to Redis", e.getCause());
    } catch (TimeoutException e) {
      throw new RedisConnectionException("no connection to Redis within " + wait.toMillis() + " ms");
    }
    opened(connection);
    RedisClusterCommands<String, String> c = commands;
    if (c == null) {
      throw new RedisConnectionException("the store is closed");
    }
    return c;
  }

  /** Takes an open connection's commands, once. */
  private synchronized void opened(StatefulConnection<String, String> connection) {
    if (commands == null && !closed) {
      // the synchronous commands serve monitoring calls: they wait this long at most
      connection.setTimeout(timeout);
      if (connection instanceof StatefulRedisClusterConnection<String, String> cluster) {
        clusterConnection = cluster;
        async = cluster.async();
        commands = cluster.sync();
      } else {
        StatefulRedisConnection<String, String> single =
            (StatefulRedisConnection<String, String>) connection;
        async = single.async();
        commands = single.sync();
      }
    }
  }

  @Override
  public void close() {
    CompletableFuture<? extends StatefulConnection<String, String>> f;
    synchronized (this) {
      closed = true;
      f = pending;
      commands = null;
      async = null;
      clusterConnection = null;
    }
    if (f != null) {
      f.thenAccept(StatefulConnection::close);
    }
    if (release != null) {
      release.run();
    }
  }
}
