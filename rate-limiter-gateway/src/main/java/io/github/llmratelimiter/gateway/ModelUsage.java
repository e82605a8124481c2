package io.github.llmratelimiter.gateway;

/**
 * The model tokens a response reports in its {@code usage}: what the call consumed, itemized as a
 * price table needs it (prompt, of which cached, and completion), or as a total alone.
 *
 * @param totalTokens the model tokens counted against model-token limits and quotas: the reported
 *     {@code total_tokens}, else prompt plus completion
 * @param promptTokens the prompt (input) tokens, cached ones included; 0 when not itemized
 * @param completionTokens the completion (output) tokens; 0 when not itemized
 * @param cachedTokens the prompt tokens served from the provider's prompt cache ({@code
 *     prompt_tokens_details.cached_tokens}, {@code input_tokens_details.cached_tokens}), at most
 *     {@code promptTokens}
 * @param itemized whether the prompt and completion counts are known; a usage that is a total alone
 *     is priced at the higher of the input and output prices ({@link ModelPrices#cost})
 */
public record ModelUsage(long totalTokens, long promptTokens, long completionTokens,
    long cachedTokens, boolean itemized) {

  /**
   * Validates the counts.
   *
   * @throws IllegalArgumentException if a count is negative, or more tokens are cached than
   *     prompted
   */
  public ModelUsage {
    nonNegative("totalTokens", totalTokens);
    nonNegative("promptTokens", promptTokens);
    nonNegative("completionTokens", completionTokens);
    nonNegative("cachedTokens", cachedTokens);
    if (cachedTokens > promptTokens) {
      throw new IllegalArgumentException("cachedTokens must be at most promptTokens ("
          + promptTokens + "), but was " + cachedTokens);
    }
  }

  /**
   * Returns an itemized usage whose total is prompt plus completion.
   *
   * @param promptTokens the prompt tokens, cached ones included
   * @param completionTokens the completion tokens
   * @param cachedTokens the cached prompt tokens, at most {@code promptTokens}
   * @return the usage
   * @throws IllegalArgumentException as the constructor
   */
  public static ModelUsage of(long promptTokens, long completionTokens, long cachedTokens) {
    return new ModelUsage(promptTokens + completionTokens, promptTokens, completionTokens,
        cachedTokens, true);
  }

  /**
   * Returns a usage known only as a total.
   *
   * @param totalTokens the model tokens
   * @return the usage
   * @throws IllegalArgumentException if the total is negative
   */
  public static ModelUsage ofTotal(long totalTokens) {
    return new ModelUsage(totalTokens, 0, 0, 0, false);
  }

  private static void nonNegative(String name, long value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must be >= 0, but was " + value);
    }
  }
}
