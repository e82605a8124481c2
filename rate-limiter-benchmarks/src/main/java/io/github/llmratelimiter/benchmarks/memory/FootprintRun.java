package io.github.llmratelimiter.benchmarks.memory;

import io.github.llmratelimiter.benchmarks.inprocess.TrackedKeyFootprint;
import io.github.llmratelimiter.benchmarks.load.ChildProcesses;
import io.github.llmratelimiter.benchmarks.report.MemoryFigure;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@link TrackedKeyFootprint} for every subject, each in a JVM of its own with a fixed heap
 * ({@link #JVM_ARGS}), and reads the bytes per key from its last line.
 */
public final class FootprintRun {

  /** The keys each subject tracks. */
  public static final int KEYS = 1_000_000;

  /** Each child's JVM arguments: a fixed heap, room for the largest subject. */
  public static final List<String> JVM_ARGS = List.of("-Xms3g", "-Xmx3g");

  private FootprintRun() {}

  /**
   * Measures every subject.
   *
   * @param keys the keys each subject tracks
   * @return one figure per subject, in the order of {@link TrackedKeyFootprint.Subject}
   * @throws IllegalStateException if a child fails or prints no figure
   */
  public static List<MemoryFigure> run(int keys) throws IOException, InterruptedException {
    List<MemoryFigure> figures = new ArrayList<>();
    for (TrackedKeyFootprint.Subject s : TrackedKeyFootprint.Subject.values()) {
      figures.add(measure(s, keys));
    }
    return figures;
  }

  private static MemoryFigure measure(TrackedKeyFootprint.Subject subject, int keys)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(JVM_ARGS);
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"),
        TrackedKeyFootprint.class.getName(), subject.argument, Integer.toString(keys)));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out;
    try {
      out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(5, TimeUnit.MINUTES) || p.exitValue() != 0) {
        throw new IllegalStateException(subject.argument + " failed: " + out);
      }
    } finally {
      ChildProcesses.stop(p, 5);
    }
    System.out.print(out);
    String[] lines = out.strip().split("\n");
    String[] last = lines[lines.length - 1].strip().split(" ");
    if (last.length != 3 || !last[0].equals(subject.argument)) {
      throw new IllegalStateException(subject.argument + " printed no figure: " + out);
    }
    return new MemoryFigure(subject.argument, subject.label, Long.parseLong(last[1]),
        Double.parseDouble(last[2]));
  }
}
