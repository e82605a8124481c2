package io.github.llmratelimiter.benchmarks.inprocess;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Ticker;
import io.github.llmratelimiter.core.WindowLimit;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Prints the heap retained per tracked key: used heap after a full GC, before and after a million
 * keys (second argument: another count) each made one call, of one {@link Subject}. Keys are
 * {@code tenant-N} strings, counted too, as every subject must keep its keys; the store is created
 * after the first measurement, so its fixed part (a few tables) is counted too.
 *
 * <p>Run each subject in a JVM of its own, so that nothing else lives in its heap: {@code java
 * -Xms3g -Xmx3g -cp rate-limiter-benchmarks/target/benchmarks.jar
 * io.github.llmratelimiter.benchmarks.inprocess.TrackedKeyFootprint window-bucket}. The last line
 * is {@code <subject> <keys> <bytes per key>}.
 */
public final class TrackedKeyFootprint {

  /** What is measured. */
  public enum Subject {
    /** The in-memory store, a budget with a window and a bucket, one {@code acquire} per key. */
    WINDOW_BUCKET("window-bucket", "in-memory store: window + bucket"),
    /**
     * The in-memory store, a budget with a window, a bucket and model tokens, one {@code reserve}
     * (estimate 100 model tokens) per key.
     */
    WINDOW_BUCKET_MODEL_TOKENS(
        "window-bucket-model-tokens", "in-memory store: window + bucket + model tokens"),
    /** A two-bandwidth Bucket4j bucket per key in a {@link ConcurrentHashMap}, one token each. */
    BUCKET4J_MAP("bucket4j-map", "Bucket4j two-bandwidth bucket in a ConcurrentHashMap"),
    /**
     * The same buckets in a Caffeine cache bounded as the store is (at most the keys, dropped an
     * hour after their last access).
     */
    BUCKET4J_CAFFEINE("bucket4j-caffeine",
        "Bucket4j two-bandwidth bucket in a Caffeine cache (maximumSize, expireAfterAccess)");

    /** The argument that names it. */
    public final String argument;
    /** It in words, for the report. */
    public final String label;

    Subject(String argument, String label) {
      this.argument = argument;
      this.label = label;
    }

    /**
     * Returns the subject named by {@code argument}.
     *
     * @param argument a subject's {@link #argument}
     * @return the subject
     * @throws IllegalArgumentException if no subject has that name
     */
    public static Subject of(String argument) {
      for (Subject s : values()) {
        if (s.argument.equals(argument)) {
          return s;
        }
      }
      throw new IllegalArgumentException("subject must be one of "
          + List.of(values()).stream().map(s -> s.argument).toList() + ", but was " + argument);
    }
  }

  private static final Bandwidth PER_HOUR =
      Bandwidth.builder().capacity(10).refillGreedy(10, Duration.ofHours(1)).build();
  private static final Bandwidth BURST =
      Bandwidth.builder().capacity(5).refillGreedy(1, Duration.ofSeconds(10)).build();

  private TrackedKeyFootprint() {}

  /**
   * Measures and prints.
   *
   * @param args the subject, then the number of keys (1,000,000 if none)
   */
  public static void main(String[] args) {
    Subject subject = Subject.of(args.length > 0 ? args[0] : "window-bucket");
    int keys = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
    long base = usedAfterGc();
    Object held = track(subject, keys);
    long retained = usedAfterGc() - base;
    Reference.reachabilityFence(held);
    System.out.printf(Locale.ROOT, "%s: %,d keys tracked, %,d bytes retained%n", subject.label,
        keys, retained);
    System.out.printf(Locale.ROOT, "%s %d %.1f%n", subject.argument, keys, (double) retained / keys);
  }

  private static Object track(Subject subject, int keys) {
    switch (subject) {
      case WINDOW_BUCKET, WINDOW_BUCKET_MODEL_TOKENS -> {
        boolean tokens = subject == Subject.WINDOW_BUCKET_MODEL_TOKENS;
        Budget budget = Budget.of("footprint", new WindowLimit(10, Duration.ofHours(1)),
            new BucketLimit(10, 0.001));
        if (tokens) {
          budget = budget.withModelTokens(ModelTokenLimit.perMinute(100_000));
        }
        RateLimitStore store = RateLimitStore.inMemory(Ticker.system(), 2L * keys);
        List<Budget> levels = List.of(budget);
        for (int i = 0; i < keys; i++) {
          String key = "tenant-" + i;
          if (tokens) {
            Check.allowed(store.reserve(levels, List.of(key), 1, 100, Composition.SEQUENTIAL)
                .decision());
          } else {
            Check.allowed(store.acquire(budget, key, 1, Composition.SEQUENTIAL));
          }
        }
        long tracked = store.administration().orElseThrow().trackedKeys(budget);
        if (tracked != keys) {
          throw new IllegalStateException("tracked " + tracked + " keys");
        }
        return store;
      }
      case BUCKET4J_MAP -> {
        ConcurrentHashMap<String, Bucket> map = new ConcurrentHashMap<>();
        for (int i = 0; i < keys; i++) {
          Check.allowed(map.computeIfAbsent("tenant-" + i, k -> bucket()).tryConsume(1));
        }
        return map;
      }
      case BUCKET4J_CAFFEINE -> {
        Cache<String, Bucket> cache = Caffeine.newBuilder()
            .maximumSize(2L * keys)
            .expireAfterAccess(Duration.ofHours(1))
            .build();
        for (int i = 0; i < keys; i++) {
          Check.allowed(cache.get("tenant-" + i, k -> bucket()).tryConsume(1));
        }
        cache.cleanUp();
        return cache;
      }
      default -> throw new IllegalArgumentException("subject " + subject);
    }
  }

  private static Bucket bucket() {
    return Bucket.builder().addLimit(PER_HOUR).addLimit(BURST).build();
  }

  private static long usedAfterGc() {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return rt.totalMemory() - rt.freeMemory();
  }
}
