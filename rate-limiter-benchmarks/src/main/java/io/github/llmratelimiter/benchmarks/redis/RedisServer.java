package io.github.llmratelimiter.benchmarks.redis;

import io.github.llmratelimiter.benchmarks.load.ChildProcesses;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A real {@code redis-server} process on a free loopback port, run from the binary that the Maven
 * artifact {@code com.github.codemonstur:embedded-redis} ships (extracted to a temporary
 * directory). Stopped by {@link #close()}, and at the latest when the JVM exits.
 *
 * <p>The same approach as the Redis store's tests ({@code rate-limiter-redis}'s test-only {@code
 * RedisServer}, which is not published), for benchmarks: no persistence, bound to 127.0.0.1.
 */
public final class RedisServer implements AutoCloseable {

  private static final Duration START_TIMEOUT = Duration.ofSeconds(20);

  private final int port;
  private final Path dir;
  private final Process process;

  private RedisServer(int port, Path dir, Process process) {
    this.port = port;
    this.dir = dir;
    this.process = process;
    Runtime.getRuntime().addShutdownHook(new Thread(this::close));
  }

  /**
   * Starts a server on a free loopback port and waits until it answers {@code PING}.
   *
   * @return the running server
   * @throws IllegalStateException if it does not answer within 20 s
   */
  public static RedisServer start() {
    return start(freePort(false), List.of());
  }

  /**
   * Starts a Redis Cluster node (no slots yet, {@code --cluster-enabled yes}) on a free loopback
   * port whose bus port (the port + 10000) is free as well, and waits until it answers {@code
   * PING}.
   *
   * @return the running node
   * @throws IllegalStateException if it does not answer within 20 s
   */
  static RedisServer startClusterNode() {
    return start(freePort(true), List.of("--cluster-enabled", "yes",
        "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"));
  }

  private static RedisServer start(int port, List<String> extraArgs) {
    try {
      Path dir = Files.createTempDirectory("llmratelimiter-bench-redis");
      Path binary = extract(dir);
      List<String> command = new ArrayList<>(List.of(
          binary.toString(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
          "--save", "", "--appendonly", "no", "--daemonize", "no"));
      command.addAll(extraArgs);
      Process process = new ProcessBuilder(command)
          .directory(dir.toFile())
          .redirectErrorStream(true)
          .redirectOutput(dir.resolve("redis.log").toFile())
          .start();
      RedisServer server = new RedisServer(port, dir, process);
      server.awaitPing();
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start redis-server", e);
    }
  }

  /**
   * Returns the server's loopback port.
   *
   * @return the port
   */
  int port() {
    return port;
  }

  /**
   * Returns the URI of the server.
   *
   * @return {@code redis://127.0.0.1:<port>}
   */
  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** Stops the process and deletes its directory. */
  @Override
  public void close() {
    ChildProcesses.stop(process, 10);
    try (var walk = Files.walk(dir)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException | UncheckedIOException e) {
      // a temporary directory; nothing to do
    }
  }

  private void awaitPing() {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    while (!answersPing()) {
      if (!process.isAlive() || System.nanoTime() - deadline > 0) {
        close();
        throw new IllegalStateException("redis-server did not answer on port " + port);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // bounded wait for start-up
    }
  }

  private boolean answersPing() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
      s.setSoTimeout(500);
      OutputStream out = s.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      byte[] buf = new byte[7];
      int n = s.getInputStream().read(buf);
      return n > 0 && new String(buf, 0, n, StandardCharsets.US_ASCII).startsWith("+PONG");
    } catch (IOException e) {
      return false;
    }
  }

  /** The binary for this platform, copied out of the embedded-redis jar into {@code dir}. */
  private static Path extract(Path dir) throws IOException {
    String name = binaryName(System.getProperty("os.name"), System.getProperty("os.arch"));
    Path target = dir.resolve(name);
    try (InputStream in = RedisServer.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " is not on the classpath (embedded-redis)");
      }
      Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
    }
    if (!target.toFile().setExecutable(true)) {
      throw new IOException("cannot make " + target + " executable");
    }
    return target;
  }

  /**
   * Returns the version of the binary this platform runs, from its name.
   *
   * @return for example {@code 6.2.6-v5}, or {@code unknown}
   */
  public static String version() {
    try {
      String name = binaryName(System.getProperty("os.name"), System.getProperty("os.arch"));
      return name.replaceFirst("^redis-server-", "").replaceFirst("-(linux|darwin)-.*$", "");
    } catch (IllegalStateException e) {
      return "unknown";
    }
  }

  /** The name of embedded-redis's binary for an operating system and architecture. */
  static String binaryName(String osName, String archName) {
    String os = osName.toLowerCase(Locale.ROOT);
    String arch = archName.toLowerCase(Locale.ROOT);
    boolean arm = arch.contains("aarch64") || arch.contains("arm64");
    if (os.contains("linux")) {
      return arm ? "redis-server-6.2.7-linux-arm64" : "redis-server-6.2.6-v5-linux-amd64";
    }
    if (os.contains("mac")) {
      return arm ? "redis-server-6.2.6-v5-darwin-arm64" : "redis-server-6.2.6-v5-darwin-amd64";
    }
    throw new IllegalStateException("no redis-server binary for " + os + "/" + arch);
  }

  /** A free loopback port; with {@code withBus}, one whose Cluster bus port (+10000) is free too. */
  private static int freePort(boolean withBus) {
    for (int attempt = 0; attempt < 100; attempt++) {
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        int port = s.getLocalPort();
        if (!withBus) {
          return port;
        }
        if (port + 10000 < 65536) {
          try (ServerSocket bus =
              new ServerSocket(port + 10000, 1, InetAddress.getLoopbackAddress())) {
            return port;
          } catch (IOException busTaken) {
            // try another port
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot find a free loopback port", e);
      }
    }
    throw new IllegalStateException("no free loopback port with a free bus port found");
  }
}
