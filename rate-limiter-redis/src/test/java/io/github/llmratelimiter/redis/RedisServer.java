package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisURI;
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
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A real {@code redis-server} process on a free loopback port (a server, a Sentinel, or a server that
 * accepts TLS only), run from the binary that the Maven artifact {@code
 * com.github.codemonstur:embedded-redis} ships (extracted to {@code target/}). Stopped by {@link
 * #close()}, and at the latest when the test JVM exits. Public (and published in this module's test
 * jar) for the tests of the Spring auto-configuration.
 */
public final class RedisServer implements AutoCloseable {

  private static final Duration START_TIMEOUT = Duration.ofSeconds(20);
  private static final Path WORK = Path.of("target", "redis-server");

  private static final String TLS_SYMBOL = "SSL_CTX_new";

  private final int port;
  private final List<String> extraArgs;
  private final Path dir;
  /** The Sentinel configuration, written before every start; null for a server. */
  private final String sentinelConfig;
  /** Whether the port accepts TLS only (no plain-text port). */
  private final boolean tls;
  private Process process;

  private RedisServer(int port, List<String> extraArgs, String sentinelConfig, boolean tls) {
    this.port = port;
    this.extraArgs = extraArgs;
    this.sentinelConfig = sentinelConfig;
    this.tls = tls;
    this.dir = WORK.resolve("node-" + port);
    Runtime.getRuntime().addShutdownHook(new Thread(this::kill));
  }

  /** Starts a server on a free port. */
  public static RedisServer start(String... extraArgs) {
    RedisServer s = new RedisServer(freePort(false), List.of(extraArgs), null, false);
    s.startProcess();
    return s;
  }

  /**
   * Starts a replica of {@code master} on a free port ({@code --replicaof}).
   *
   * @param master the server to replicate
   * @return the running replica
   */
  public static RedisServer startReplicaOf(RedisServer master) {
    return start("--replicaof", "127.0.0.1", Integer.toString(master.port()));
  }

  /**
   * Starts a Sentinel on a free port ({@code redis-server sentinel.conf --sentinel}) that monitors
   * {@code master} under {@code masterName} with a quorum of 1, so that it alone can fail over.
   *
   * @param masterName the name clients ask the Sentinel for
   * @param master the master to monitor
   * @return the running Sentinel
   */
  public static RedisServer startSentinel(String masterName, RedisServer master) {
    String config = "sentinel monitor " + masterName + " 127.0.0.1 " + master.port() + " 1\n";
    RedisServer s = new RedisServer(freePort(false), List.of(), config, false);
    s.startProcess();
    return s;
  }

  /**
   * Whether the redis-server binary was built with TLS (it links OpenSSL): true for every binary
   * embedded-redis ships for Linux and macOS.
   *
   * @return whether {@link #startTls} can run
   */
  public static boolean supportsTls() {
    try {
      byte[] bytes = Files.readAllBytes(binary());
      byte[] symbol = TLS_SYMBOL.getBytes(StandardCharsets.US_ASCII);
      outer:
      for (int i = 0; i <= bytes.length - symbol.length; i++) {
        for (int j = 0; j < symbol.length; j++) {
          if (bytes[i + j] != symbol[j]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Starts a server whose free port accepts TLS only ({@code --port 0 --tls-port}), with the
   * server certificate and CA of {@code certificates}; by default it requires a client certificate
   * signed by that CA ({@code tls-auth-clients yes}).
   *
   * @param certificates the certificates
   * @param extraArgs further arguments, for example {@code "--tls-auth-clients", "no"}
   * @return the running server
   */
  public static RedisServer startTls(TestCertificates certificates, String... extraArgs) {
    List<String> args = new ArrayList<>(List.of(
        "--tls-cert-file", certificates.serverCertificate().toAbsolutePath().toString(),
        "--tls-key-file", certificates.serverKey().toAbsolutePath().toString(),
        "--tls-ca-cert-file", certificates.caCertificate().toAbsolutePath().toString()));
    args.addAll(List.of(extraArgs));
    RedisServer s = new RedisServer(freePort(false), List.copyOf(args), null, true);
    s.startProcess();
    return s;
  }

  /**
   * Starts a Cluster-enabled node on a free port whose bus port (+10000) is free as well, with
   * {@code extraArgs} added to its command line.
   */
  static RedisServer startClusterNode(String... extraArgs) {
    int port = freePort(true);
    List<String> args = new ArrayList<>(List.of(
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", "5000"));
    args.addAll(List.of(extraArgs));
    RedisServer s = new RedisServer(port, List.copyOf(args), null, false);
    s.startProcess();
    return s;
  }

  /**
   * Returns the server's loopback port.
   *
   * @return the port
   */
  public int port() {
    return port;
  }

  /**
   * Returns the server's URI.
   *
   * @return {@code redis://127.0.0.1:<port>}, or {@code rediss://} for a TLS server
   */
  public RedisURI uri() {
    return RedisURI.create((tls ? "rediss" : "redis") + "://127.0.0.1:" + port);
  }

  /**
   * Returns what the server logged so far.
   *
   * @return the log's text, empty if there is none yet
   */
  public String log() {
    try {
      return Files.readString(dir.resolve("redis.log"), StandardCharsets.ISO_8859_1);
    } catch (IOException e) {
      return "";
    }
  }

  /**
   * Returns how many lines of the log contain {@code text}.
   *
   * @param text the text to look for
   * @return the number of lines
   */
  public long logged(String text) {
    return log().lines().filter(line -> line.contains(text)).count();
  }

  /**
   * Waits (at most 10 s) until more than {@code before} lines of the log contain {@code text}.
   *
   * @param text the text to look for, for example why the server refused a connection
   * @param before the count of such lines before, from {@link #logged}
   * @throws IllegalStateException if no further line came within the wait
   */
  public void awaitLogged(String text, long before) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (logged(text) <= before) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("redis-server on port " + port + " did not log '" + text
            + "' within 10 s; see " + dir.resolve("redis.log").toAbsolutePath());
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // bounded wait on a condition
    }
  }

  /** Whether the process runs. */
  public synchronized boolean running() {
    return process != null && process.isAlive();
  }

  /** Kills the process, as a crash would; the port stays reserved for {@link #restart()}. */
  public synchronized void stop() {
    kill();
  }

  /** Starts the process again on the same port, with an empty data set. */
  public synchronized void restart() {
    kill();
    startProcess();
  }

  /** Suspends the process (SIGSTOP): it holds its connections but answers nothing. */
  public void freeze() {
    signal("-STOP");
  }

  /** Resumes a frozen process (SIGCONT). */
  public void thaw() {
    signal("-CONT");
  }

  @Override
  public synchronized void close() {
    kill();
  }

  private synchronized void kill() {
    Process p = process;
    if (p != null && p.isAlive()) {
      p.destroyForcibly();
      try {
        p.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void signal(String sig) {
    try {
      Process kill = new ProcessBuilder("kill", sig, Long.toString(process.pid())).inheritIO().start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill " + sig + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private synchronized void startProcess() {
    try {
      deleteRecursively(dir);
      Files.createDirectories(dir);
      List<String> cmd = new ArrayList<>(List.of(binary().toAbsolutePath().toString()));
      if (sentinelConfig != null) {
        // Sentinel rewrites its configuration file: a fresh one at every start
        Files.writeString(dir.resolve("sentinel.conf"), sentinelConfig);
        cmd.addAll(List.of("sentinel.conf", "--sentinel"));
      }
      cmd.addAll(List.of("--port", tls ? "0" : Integer.toString(port)));
      if (tls) {
        cmd.addAll(List.of("--tls-port", Integer.toString(port)));
      }
      cmd.addAll(List.of("--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
          "--daemonize", "no"));
      cmd.addAll(extraArgs);
      process = new ProcessBuilder(cmd)
          .directory(dir.toFile())
          .redirectErrorStream(true)
          .redirectOutput(dir.resolve("redis.log").toFile())
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start redis-server", e);
    }
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    while (!(tls ? logSaysReady() : answersPing())) {
      if (!process.isAlive() || System.nanoTime() - deadline > 0) {
        kill();
        throw new IllegalStateException("redis-server did not answer on port " + port + "; see "
            + dir.resolve("redis.log").toAbsolutePath());
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // bounded wait for start-up
    }
  }

  /** Whether a TLS-only server logged that it listens (a plain-text PING cannot tell). */
  private boolean logSaysReady() {
    return log().contains("Ready to accept connections");
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

  /** The binary for this platform, extracted once from the embedded-redis jar. */
  static synchronized Path binary() throws IOException {
    String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
    String name;
    if (os.contains("linux")) {
      name = arch.contains("aarch64") || arch.contains("arm64")
          ? "redis-server-6.2.7-linux-arm64" : "redis-server-6.2.6-v5-linux-amd64";
    } else if (os.contains("mac")) {
      name = arch.contains("aarch64") ? "redis-server-6.2.6-v5-darwin-arm64"
          : "redis-server-6.2.6-v5-darwin-amd64";
    } else {
      throw new IllegalStateException("no redis-server binary for " + os + "/" + arch);
    }
    Path target = WORK.resolve(name);
    if (!Files.isExecutable(target)) {
      Files.createDirectories(WORK);
      try (InputStream in = RedisServer.class.getClassLoader().getResourceAsStream(name)) {
        if (in == null) {
          throw new IllegalStateException(name + " is not on the test classpath (embedded-redis)");
        }
        Path tmp = Files.createTempFile(WORK, name, ".tmp");
        Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
        if (!tmp.toFile().setExecutable(true)) {
          throw new IOException("cannot make " + tmp + " executable");
        }
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      }
    }
    return target;
  }

  private static int freePort(boolean withBus) {
    for (int attempt = 0; attempt < 100; attempt++) {
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        int port = s.getLocalPort();
        if (!withBus) {
          return port;
        }
        if (port + 10000 < 65536) {
          try (ServerSocket bus = new ServerSocket(port + 10000, 1, InetAddress.getLoopbackAddress())) {
            bus.setReuseAddress(true);
            return port;
          } catch (IOException busTaken) {
            // try another port
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    throw new IllegalStateException("no free loopback port found");
  }

  private static void deleteRecursively(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (var walk = Files.walk(p)) {
      for (Path q : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(q);
      }
    }
  }
}
