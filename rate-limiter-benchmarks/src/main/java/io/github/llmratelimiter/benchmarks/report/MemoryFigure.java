package io.github.llmratelimiter.benchmarks.report;

/**
 * The heap one subject retains per tracked key, each key after one call.
 *
 * @param subject the subject's argument ({@code window-bucket}, {@code bucket4j-map}, ...)
 * @param label the subject in words
 * @param keys the keys tracked
 * @param bytesPerKey retained heap divided by the keys, key strings included
 */
public record MemoryFigure(String subject, String label, long keys, double bytesPerKey) {

  /**
   * Validates the figure.
   *
   * @throws IllegalArgumentException if no key was tracked or the bytes are not a number
   */
  public MemoryFigure {
    if (keys < 1) {
      throw new IllegalArgumentException("keys must be >= 1, but was " + keys);
    }
    if (Double.isNaN(bytesPerKey)) {
      throw new IllegalArgumentException("bytesPerKey must be a number, but was NaN");
    }
  }
}
