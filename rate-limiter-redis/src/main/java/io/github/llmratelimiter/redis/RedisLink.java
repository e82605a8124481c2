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
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The store's one connection to Redis (standalone or Cluster), opened lazily and without ever
 * blocking a caller longer than the command timeout: a connection attempt runs in the background,
 * and a caller waits for it at most that long. Once open, Lettuce reconnects by itself.
 *
 * <p>Lettuce's own timeout on this connection is the time after which a command is forgotten
 * (its late reply, if any, is dropped); callers stop waiting earlier, by their own measure.
 */
final class RedisLink implements AutoCloseable {

  private final Supplier<CompletableFuture<? extends StatefulConnection<String, String>>> connector;
  private final @Nullable Runnable release;
  private final Duration timeout;
  private final Duration forget;
  private @Nullable CompletableFuture<? extends StatefulConnection<String, String>> pending;
  private volatile @Nullable RedisClusterCommands<String, String> commands;
  private volatile @Nullable RedisClusterAsyncCommands<String, String> async;
  private volatile boolean closed;

  private RedisLink(
      Supplier<CompletableFuture<? extends StatefulConnection<String, String>>> connector,
      Duration timeout,
      Duration forget,
      @Nullable Runnable release) {
    this.connector = connector;
    this.release = release;
    this.timeout = timeout;
    this.forget = forget;
  }

  /**
   * A link to a standalone server: callers wait up to {@code timeout} for a connection, Lettuce
   * forgets a command after {@code forget}; {@code release} (if any) runs on close, after the
   * connection.
   */
  static RedisLink standalone(RedisClient client, RedisURI uri, Duration timeout, Duration forget,
      @Nullable Runnable release) {
    return new RedisLink(() -> client.connectAsync(StringCodec.UTF8, uri).toCompletableFuture(),
        timeout, forget, release);
  }

  /** A link to a Cluster; see {@link #standalone}. */
  static RedisLink cluster(RedisClusterClient client, Duration timeout, Duration forget,
      @Nullable Runnable release) {
    return new RedisLink(
        () -> client.refreshPartitionsAsync().toCompletableFuture() // a cluster connection needs them
            .thenCompose(loaded -> client.connectAsync(StringCodec.UTF8)),
        timeout, forget, release);
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
   * Returns the asynchronous commands, connecting first if needed.
   *
   * @throws RedisConnectionException if no connection is open within the timeout
   */
  RedisClusterAsyncCommands<String, String> async() {
    RedisClusterAsyncCommands<String, String> a = async;
    if (a == null) {
      connect(timeout);
      a = async;
      if (a == null) {
        throw new RedisConnectionException("the store is closed");
      }
    }
    return a;
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

  private RedisClusterCommands<String, String> connect(Duration wait) {
    CompletableFuture<? extends StatefulConnection<String, String>> f;
    synchronized (this) {
      if (closed) {
        throw new RedisConnectionException("the store is closed");
      }
      if (commands != null) {
        return commands;
      }
      if (pending == null || pending.isCompletedExceptionally()) {
        pending = connector.get();
      }
      f = pending;
    }
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
    synchronized (this) {
      if (commands == null) {
        connection.setTimeout(forget);
        if (connection instanceof StatefulRedisClusterConnection<String, String> cluster) {
          async = cluster.async();
          commands = cluster.sync();
        } else {
          StatefulRedisConnection<String, String> single =
              (StatefulRedisConnection<String, String>) connection;
          async = single.async();
          commands = single.sync();
        }
      }
      return commands;
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
    }
    if (f != null) {
      f.thenAccept(StatefulConnection::close);
    }
    if (release != null) {
      release.run();
    }
  }
}
