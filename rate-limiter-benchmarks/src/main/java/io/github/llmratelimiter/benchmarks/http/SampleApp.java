package io.github.llmratelimiter.benchmarks.http;

import io.github.llmratelimiter.benchmarks.load.ChildProcesses;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A gateway under test in a JVM of its own on a free loopback port, its Actuator on another free
 * loopback port, with extra application arguments: the sample gateway ({@code sample-app}'s
 * executable jar), or a benchmark gateway of an integration-test module, such as the reactive one of
 * {@code integration-tests/webflux} (a main class on that module's test class path); stopped by
 * {@link #close()}, and at the latest when this JVM exits.
 */
final class SampleApp implements AutoCloseable {

  /** The OS's clock ticks per second in {@code /proc} (USER_HZ, 100 on Linux). */
  private static final int CLOCK_TICKS_PER_SECOND = 100;

  private static final Duration START_TIMEOUT = Duration.ofSeconds(180);
  /** The gateway's JVM: a fixed heap, as the JMH forks have. */
  static final List<String> JVM_ARGS = HttpRun.GATEWAY_JVM_ARGS;

  private final Process process;
  private final Path log;
  final int port;
  private final int managementPort;

  private SampleApp(Process process, Path log, int port, int managementPort) {
    this.process = process;
    this.log = log;
    this.port = port;
    this.managementPort = managementPort;
    Runtime.getRuntime().addShutdownHook(new Thread(this::close));
  }

  /** The reactive benchmark gateway's main class, on the test class path of {@code integration-tests/webflux}. */
  static final String REACTIVE_MAIN = "io.github.llmratelimiter.webflux.bench.BenchGateway";

  /**
   * The JVM arguments that launch the sample gateway's executable jar.
   *
   * @param jar the executable jar, {@code sample-app/target/sample-app.jar}
   * @return {@code -jar} and the jar
   * @throws IllegalArgumentException if there is no such jar
   */
  static List<String> jar(Path jar) {
    if (!Files.isRegularFile(jar)) {
      throw new IllegalArgumentException("no sample-app jar at " + jar.toAbsolutePath()
          + "; build it with ./mvnw -pl sample-app -am package -DskipTests");
    }
    return List.of("-jar", jar.toAbsolutePath().toString());
  }

  /**
   * The JVM arguments that launch the reactive benchmark gateway from {@code integration-tests/webflux}.
   *
   * @param module the module's directory, {@code integration-tests/webflux}
   * @return {@code -cp}, its test classes and test class path, and the main class
   * @throws IllegalArgumentException if the module was not built with {@code package}
   */
  static List<String> reactive(Path module) throws IOException {
    return testClassPath(module, REACTIVE_MAIN);
  }

  /**
   * The JVM arguments that launch a main class of a module's test class path.
   *
   * @param module the module's directory, such as {@code integration-tests/webflux}, built with
   *     {@code package} (which writes its test class path to {@code target/bench-classpath.txt})
   * @param mainClass the main class, among the module's test classes or on its test class path
   * @param jvmArgs JVM options that go before the class path, such as {@code
   *     -XX:+AllowRedefinitionToAddDeleteMethods}
   * @return the options, {@code -cp}, the module's test classes and test class path, and the main
   *     class
   * @throws IllegalArgumentException if the module was not built with {@code package}
   */
  static List<String> testClassPath(Path module, String mainClass, String... jvmArgs)
      throws IOException {
    Path classes = module.resolve("target/test-classes");
    Path classpath = module.resolve("target/bench-classpath.txt");
    if (!Files.isRegularFile(classpath) || !Files.isDirectory(classes)) {
      throw new IllegalArgumentException("no test class path of " + mainClass + " in "
          + module.toAbsolutePath() + "; build it with ./mvnw -pl " + module + " -am package "
          + "-DskipTests");
    }
    List<String> launch = new ArrayList<>(List.of(jvmArgs));
    launch.addAll(List.of("-cp", classes.toAbsolutePath() + java.io.File.pathSeparator
        + Files.readString(classpath).strip(), mainClass));
    return launch;
  }

  /**
   * The system property naming a directory: when set, each gateway records a JFR profile
   * ({@code settings=profile}) into {@code <directory>/<name>.jfr}, written when it stops.
   */
  static final String JFR_DIRECTORY = "bench.jfr";

  /**
   * The system property that sets the recording's method sampling ({@code method-profiling} of
   * JDK's {@code profile} settings: {@code normal} 20 ms, {@code high} 10 ms, its default, or
   * {@code max} 1 ms, for ten times the samples of a short run).
   */
  static final String JFR_SAMPLING = "bench.jfr.sampling";

  /**
   * Starts a gateway and waits until its health endpoint answers.
   *
   * @param name the gateway's name in file names, such as {@code servlet-on}
   * @param launch the JVM arguments that launch it ({@link #jar} or {@link #reactive})
   * @param args application arguments, such as {@code --ratelimiter.enabled=false}
   * @return the running gateway
   */
  static SampleApp start(String name, List<String> launch, List<String> args)
      throws IOException, InterruptedException {
    int port;
    int managementPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        ServerSocket m = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
      managementPort = m.getLocalPort();
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(JVM_ARGS);
    String jfr = System.getProperty(JFR_DIRECTORY);
    if (jfr != null) {
      String sampling = System.getProperty(JFR_SAMPLING);
      cmd.add("-XX:StartFlightRecording=settings=profile,"
          + (sampling == null ? "" : "method-profiling=" + sampling + ",")
          + "dumponexit=true,filename=" + Path.of(jfr, name + ".jfr").toAbsolutePath());
    }
    cmd.addAll(launch);
    cmd.addAll(List.of("--server.port=" + port,
        "--server.address=127.0.0.1", "--management.server.port=" + managementPort,
        "--spring.main.banner-mode=off",
        "--logging.level.root=WARN"));
    cmd.addAll(args);
    Path log = Files.createTempFile("sample-app-", ".log");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    SampleApp app = new SampleApp(p, log, port, managementPort);
    app.awaitHealthy();
    return app;
  }

  private void awaitHealthy() throws InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    // Actuator is on the management port only (the sample binds it to 127.0.0.1)
    HttpRequest health = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + managementPort + "/actuator/health"))
        .timeout(Duration.ofSeconds(2)).build();
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    while (true) {
      try {
        if (http.send(health, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not listening yet
      }
      if (!process.isAlive() || System.nanoTime() - deadline > 0) {
        ChildProcesses.stop(process, 20);
        String tail = tail(); // before close() deletes the log
        close();
        throw new IllegalStateException("the gateway did not start on port " + port + ": " + tail);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // bounded wait for start-up
    }
  }

  /**
   * Returns the CPU time the gateway's process has used so far, user and system, as the OS
   * accounts it ({@code utime + stime} of {@code /proc/<pid>/stat} on Linux, read through {@link
   * ProcessHandle.Info#totalCpuDuration()}).
   *
   * @return seconds of CPU
   * @throws IllegalStateException if the OS reports none
   */
  double cpuSeconds() {
    return process.info().totalCpuDuration().orElseThrow(() -> new IllegalStateException(
        "the OS reports no CPU time of the gateway's process " + process.pid())).toNanos() / 1e9;
  }

  /**
   * Returns the CPU time the gateway's JIT compiler threads have used so far (alive ones: a
   * compiler thread the JVM stopped takes its time with it), user and system, from {@code
   * /proc/<pid>/task/<tid>/stat} (threads named {@code C1 CompilerThre…}, {@code C2 …}); 0 where
   * the OS has no {@code /proc}.
   *
   * @return seconds of CPU
   */
  double compilerCpuSeconds() {
    Path tasks = Path.of("/proc", Long.toString(process.pid()), "task");
    if (!Files.isDirectory(tasks)) {
      return 0;
    }
    long ticks = 0;
    try (DirectoryStream<Path> threads = Files.newDirectoryStream(tasks)) {
      for (Path thread : threads) {
        String stat;
        try {
          stat = Files.readString(thread.resolve("stat"));
        } catch (IOException gone) {
          continue; // the thread ended meanwhile
        }
        String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        if (name.contains("CompilerThre")) {
          String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return ticks / (double) CLOCK_TICKS_PER_SECOND;
  }

  /** Returns {@code http://127.0.0.1:<management port>}, where its Actuator answers. */
  String managementBase() {
    return "http://127.0.0.1:" + managementPort;
  }

  /** Returns {@code http://127.0.0.1:<port>}. */
  String base() {
    return "http://127.0.0.1:" + port;
  }

  /**
   * Returns the gateway's log so far (its standard output and error).
   *
   * @throws UncheckedIOException if it cannot be read
   */
  String log() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns the end of the gateway's log, for an error message. */
  String tail() {
    try {
      String s = Files.readString(log);
      return s.length() > 4000 ? s.substring(s.length() - 4000) : s;
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  /**
   * Writes the gateway's threads ({@code jcmd <pid> Thread.print}) to a file kept after the run,
   * for a call that hung.
   *
   * @return the file, or why there is none
   */
  String threadDump() {
    try {
      Path dump = Files.createTempFile("sample-app-threads-", ".txt");
      Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
      Process p = new ProcessBuilder(jcmd.toString(), Long.toString(process.pid()), "Thread.print")
          .redirectErrorStream(true).redirectOutput(dump.toFile()).start();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
      return dump.toString();
    } catch (IOException e) {
      return "(no thread dump: " + e + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "(no thread dump: interrupted)";
    }
  }

  /**
   * Kills the gateway at once (SIGKILL on Linux and macOS), as an out-of-memory kill or a lost node
   * does: it runs no shutdown hook and sends nothing more; waits until the process is gone.
   */
  void kill() throws InterruptedException {
    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    ChildProcesses.stop(process, 20);
    try {
      Files.deleteIfExists(log);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
