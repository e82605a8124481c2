package io.github.llmratelimiter.core;

import io.github.llmratelimiter.core.internal.Args;

/**
 * What one key used of a quota in its current period, for a list of the top spenders.
 *
 * @param key the key, in clear: callers that show it must mask it
 * @param used what it used (requests, model tokens, or cost in micro-units)
 */
public record QuotaSpend(String key, long used) {

  /**
   * Validates the entry.
   *
   * @throws IllegalArgumentException on a blank key or a negative amount
   */
  public QuotaSpend {
    Args.notBlank("key", key);
    Args.notNegative("used", used);
  }
}
