package io.github.llmratelimiter.benchmarks.inprocess;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * A peer's limiter objects: one that always allows and one that always denies for the one-key
 * cases, and one of each per key, in a {@link ConcurrentHashMap}, for the many-keys cases.
 *
 * @param <T> the peer's limiter type
 */
final class PeerLimiters<T> {

  final T allowing;
  final T denying;
  final String[] keys = Limits.keys("tenant", Limits.KEY_COUNT);
  private final Map<String, T> allowingByKey = new ConcurrentHashMap<>();
  private final Map<String, T> denyingByKey = new ConcurrentHashMap<>();

  /**
   * Builds the limiters.
   *
   * @param allowing makes a limiter, named by its argument, that allows every call of a run
   * @param denying makes a limiter, named by its argument, whose budget is already spent
   */
  PeerLimiters(Function<String, T> allowing, Function<String, T> denying) {
    this.allowing = allowing.apply("one");
    this.denying = denying.apply("one");
    for (String key : keys) {
      this.allowingByKey.put(key, allowing.apply(key));
      this.denyingByKey.put(key, denying.apply(key));
    }
  }

  /** Looks up the allowing limiter of key {@code i}. */
  T allowing(int i) {
    return allowingByKey.get(keys[i]);
  }

  /** Looks up the denying limiter of key {@code i}. */
  T denying(int i) {
    return denyingByKey.get(keys[i]);
  }
}
