package io.github.llmratelimiter.autoconfigure;

import io.github.llmratelimiter.core.MaintenanceScheduler;
import io.github.llmratelimiter.core.QuotaPersistence;
import io.github.llmratelimiter.core.RateLimitStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.context.SmartLifecycle;

/**
 * Keeps the in-memory store's quota counters in {@code ratelimiter.quota-file} across restarts:
 * reads the file when the bean is created, before any front door serves a call (a missing file is
 * a first start; a corrupt, truncated or foreign one fails start-up with a {@link
 * io.github.llmratelimiter.core.QuotaFileException} naming it), writes it every {@code
 * ratelimiter.quota-file-interval} while the application runs and once more when it stops, after
 * the web server's graceful shutdown (its phase is below the web server's, so it starts before and
 * stops after it). A write that fails is logged as a WARN naming the file and retried at the next
 * interval; calls go on being decided. A start-up whose file was refused never writes it.
 */
final class QuotaFileLifecycle implements SmartLifecycle, InitializingBean, DisposableBean {

  /** Below the web server's start-stop phase ({@code DEFAULT_PHASE - 2048}). */
  static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

  private static final Log log = LogFactory.getLog(QuotaFileLifecycle.class);

  private final QuotaPersistence persistence;
  private final Path file;
  private final Duration interval;
  private final @Nullable MaintenanceScheduler scheduler;
  private @Nullable ScheduledExecutorService executor;
  private @Nullable Future<?> saves;
  private volatile boolean loaded;
  private volatile boolean running;

  /**
   * Creates the lifecycle, which writes on a daemon thread of its own.
   *
   * @throws InvalidRateLimitPropertyException naming {@code ratelimiter.quota-file} when the store
   *     keeps no quotas in memory or the file's directory does not exist, or {@code
   *     ratelimiter.quota-file-interval} when the interval is not positive
   */
  QuotaFileLifecycle(RateLimitStore store, Path file, @Nullable Duration interval) {
    this(store, file, interval, null);
  }

  /** Creates the lifecycle, whose periodic writes {@code scheduler} runs (tests run them by hand). */
  QuotaFileLifecycle(RateLimitStore store, Path file, @Nullable Duration interval,
      @Nullable MaintenanceScheduler scheduler) {
    this.persistence = store.quotaPersistence().orElseThrow(() ->
        new InvalidRateLimitPropertyException("ratelimiter.quota-file", file, "unset with a store"
            + " that keeps its quotas itself (" + store.getClass().getSimpleName() + "; the Redis"
            + " store keeps them in Redis): only the in-memory store saves them to a file"));
    if (interval == null || interval.isNegative() || interval.isZero()
        || interval.compareTo(Duration.ofNanos(Long.MAX_VALUE)) > 0) {
      throw new InvalidRateLimitPropertyException("ratelimiter.quota-file-interval", interval,
          "a positive duration, for example 60s");
    }
    Path absolute = file.toAbsolutePath();
    Path dir = absolute.getParent();
    if (dir == null || !Files.isDirectory(dir)) {
      throw new InvalidRateLimitPropertyException("ratelimiter.quota-file", file,
          "a file in an existing directory (" + dir + " is not a directory)");
    }
    if (Files.isDirectory(absolute)) {
      throw new InvalidRateLimitPropertyException("ratelimiter.quota-file", file,
          "a file, not a directory");
    }
    this.file = file;
    this.interval = interval;
    this.scheduler = scheduler;
  }

  /** Reads the file into the store: before any call is decided. */
  @Override
  public void afterPropertiesSet() {
    boolean exists = Files.exists(file);
    int read = persistence.load(file);
    loaded = true;
    if (exists) {
      log.info("Read " + read + " quota counters from " + file);
    } else {
      log.info("No quota file " + file + " yet: every quota starts unused; it is written every "
          + interval + " and when the application stops");
    }
  }

  @Override
  public synchronized void start() {
    if (running) {
      return;
    }
    if (scheduler != null) {
      saves = scheduler.schedule(this::saveQuietly);
    } else {
      ScheduledExecutorService e = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "rate-limiter-quota-file");
        t.setDaemon(true);
        return t;
      });
      long nanos = interval.toNanos();
      saves = e.scheduleWithFixedDelay(this::saveQuietly, nanos, nanos, TimeUnit.NANOSECONDS);
      executor = e;
    }
    running = true;
  }

  /** Stops the periodic writes and writes the file once more. */
  @Override
  public synchronized void stop() {
    if (!running) {
      return;
    }
    cancel();
    running = false;
    saveQuietly();
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }

  /** Stops the periodic writes if {@link #stop()} did not. */
  @Override
  public synchronized void destroy() {
    cancel();
  }

  private void cancel() {
    Future<?> f = saves;
    if (f != null) {
      f.cancel(false);
      saves = null;
    }
    ScheduledExecutorService e = executor;
    if (e != null) {
      e.shutdown();
      executor = null;
    }
  }

  /** Writes the file; a failure is logged, never thrown (the file's keys are never logged). */
  void saveQuietly() {
    if (!loaded) {
      return; // a file that was not read must not be overwritten
    }
    try {
      int written = persistence.save(file);
      if (log.isDebugEnabled()) {
        log.debug("Wrote " + written + " quota counters to " + file);
      }
    } catch (Exception e) {
      log.warn("Could not write the quota counters to " + file + " (" + e + "); the file keeps"
          + " what it held, and calls go on being decided");
    }
  }
}
