package io.github.llmratelimiter.benchmarks.report;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * What the figures were measured on: processors, CPU model, memory, operating system and JVM.
 *
 * @param cpus the processors the JVM sees
 * @param cpuModel the first {@code model name} of {@code /proc/cpuinfo}, or {@code unknown}
 * @param memory the {@code MemTotal} of {@code /proc/meminfo}, or {@code unknown}
 * @param os the operating system's name, version and architecture
 * @param jvm the JVM's name, vendor and runtime version
 */
public record Machine(int cpus, String cpuModel, String memory, String os, String jvm) {

  /**
   * Describes the machine this JVM runs on.
   *
   * @return the machine
   */
  public static Machine current() {
    return new Machine(
        Runtime.getRuntime().availableProcessors(),
        procField("/proc/cpuinfo", "model name"),
        procField("/proc/meminfo", "MemTotal"),
        System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
            + System.getProperty("os.arch"),
        System.getProperty("java.vm.name") + " (" + System.getProperty("java.vm.vendor") + ") "
            + System.getProperty("java.runtime.version"));
  }

  /**
   * Returns the one-, five- and fifteen-minute load averages of {@code /proc/loadavg}.
   *
   * @return the load averages, or {@code unknown}
   */
  public static String loadAverage() {
    try {
      String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return parts[0] + " " + parts[1] + " " + parts[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  private static String procField(String file, String field) {
    try {
      List<String> lines = Files.readAllLines(Path.of(file));
      for (String line : lines) {
        int colon = line.indexOf(':');
        if (colon > 0 && line.substring(0, colon).trim().equals(field)) {
          return line.substring(colon + 1).trim();
        }
      }
    } catch (IOException e) {
      // not Linux: say so below
    }
    return "unknown";
  }
}
