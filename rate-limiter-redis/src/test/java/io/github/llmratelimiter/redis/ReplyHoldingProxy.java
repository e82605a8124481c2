package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisURI;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy in front of a redis-server that can hold Redis's replies on their way back: the
 * commands reach Redis and run, their replies wait in the proxy until {@link #release()}. So a test
 * can make a reply arrive long after its caller stopped waiting, with Redis healthy throughout.
 */
final class ReplyHoldingProxy implements AutoCloseable {

  private final ServerSocket listener;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final Object gate = new Object();
  private boolean holding;

  ReplyHoldingProxy(int redisPort) throws IOException {
    listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(() -> {
      try {
        while (true) {
          Socket client = listener.accept();
          Socket redis = new Socket(InetAddress.getLoopbackAddress(), redisPort);
          client.setTcpNoDelay(true);
          redis.setTcpNoDelay(true);
          sockets.add(client);
          sockets.add(redis);
          pump(client, redis, false);
          pump(redis, client, true);
        }
      } catch (IOException closed) {
        // the proxy was closed
      }
    }, "reply-holding-proxy");
    accept.setDaemon(true);
    accept.start();
  }

  /** The proxy's URI, for a store under test. */
  RedisURI uri() {
    return RedisURI.create("redis://127.0.0.1:" + listener.getLocalPort());
  }

  /** From now on, replies wait in the proxy. */
  void hold() {
    synchronized (gate) {
      holding = true;
    }
  }

  /** Lets the held replies, and every later one, through. */
  void release() {
    synchronized (gate) {
      holding = false;
      gate.notifyAll();
    }
  }

  private void awaitRelease() throws InterruptedException {
    synchronized (gate) {
      while (holding) {
        gate.wait();
      }
    }
  }

  private void pump(Socket from, Socket to, boolean replies) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[65536];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          if (replies) {
            awaitRelease();
          }
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException | InterruptedException closed) {
        // a side closed
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "reply-holding-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // already closed
    }
  }

  @Override
  public void close() throws IOException {
    release();
    listener.close();
    for (Socket s : sockets) {
      closeQuietly(s);
    }
  }
}
