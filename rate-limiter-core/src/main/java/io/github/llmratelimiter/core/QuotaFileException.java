package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;
import java.nio.file.Path;
import org.jspecify.annotations.Nullable;

/**
 * Thrown when a quota file cannot be read back: it is truncated, corrupt, of another format or
 * version, or unreadable. Its message names the file and what is wrong with it; the counters it
 * holds are not read at all, so a store that refuses it never starts with quotas reset by accident.
 */
public final class QuotaFileException extends IllegalStateException {

  private static final long serialVersionUID = 1L;

  private final transient Path file;
  private final String problem;

  /**
   * Creates the exception.
   *
   * @param file the quota file
   * @param problem what is wrong with it, for example {@code "is truncated"}
   * @param cause the failure that revealed it, or {@code null}
   * @throws IllegalArgumentException if the file or the problem is null
   */
  public QuotaFileException(Path file, String problem, @Nullable Throwable cause) {
    super("Quota file '" + Args.notNull("file", file) + "' " + Args.notNull("problem", problem)
        + ". Restore a good copy of it, or remove it to start with every quota unused.", cause);
    this.file = file;
    this.problem = problem;
  }

  /**
   * Returns the quota file.
   *
   * @return the file
   */
  public Path file() {
    return file;
  }

  /**
   * Returns what is wrong with the file.
   *
   * @return the problem, for example {@code "is truncated"}
   */
  public String problem() {
    return problem;
  }
}
