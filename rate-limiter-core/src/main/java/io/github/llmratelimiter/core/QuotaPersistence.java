package io.github.llmratelimiter.core;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Saves a store's quota counters to a file and reads them back, so that a store that keeps them in
 * memory resumes its quotas after a restart instead of starting every period afresh.
 *
 * <p>The file holds, per budget name, key, quota and period, what was used and which thresholds
 * were reported; only periods that have not ended more than a day ago (the time a late settlement
 * may still need them) are written, and reading drops those that have. The keys are written as the
 * store holds them: a gateway's store keys are its callers' API keys (with the model for a level
 * per model), so the file is as secret as the keys and is created readable by its owner only where
 * the file system has POSIX permissions.
 *
 * <p>The format is versioned, starts with a magic header and ends with a CRC-32 of its content: a
 * file that is truncated, corrupt, of another format or of another version is refused with a
 * {@link QuotaFileException}, never read in part. Offered by {@link
 * RateLimitStore#quotaPersistence()}; thread-safe.
 */
public interface QuotaPersistence {

  /**
   * Writes every counter of a period not yet over (or over for less than a day) to {@code file},
   * atomically: the counters are written to a temporary file in the same directory, forced to the
   * disk and moved over {@code file} in one atomic step, so a crash or a failure leaves the file as
   * it was. Each counter is read in one consistent step (what it used and the thresholds it
   * reported together) while calls go on; two saves never run at once.
   *
   * @param file the file to write; its directory must exist
   * @return how many counters were written
   * @throws IOException if the file cannot be written (it is then left as it was); also when the
   *     file system cannot move a file atomically
   * @throws IllegalArgumentException if the file is null or has no name
   */
  int save(Path file) throws IOException;

  /**
   * Reads the counters {@link #save} wrote into the store, all or none: each replaces the store's
   * counter of the same budget name, key, quota and period; a counter whose period ended more than a
   * day ago is dropped. A file that does not exist holds nothing (a first start). Call it before the
   * store decides its first call: a call charged meanwhile on a counter the file replaces is lost.
   *
   * @param file the file to read
   * @return how many counters were read into the store; 0 when the file does not exist
   * @throws QuotaFileException if the file exists but cannot be read, is truncated or corrupt, or is
   *     of another format or version; the store is then left as it was
   * @throws IllegalArgumentException if the file is null
   */
  int load(Path file);
}
